"""Moved to :mod:`.harbor.environment` (what a task asks of its environment) and :mod:`.harbor.compose`
(its compose file). Kept only for ``commands/harbor.py``, which imports :func:`base_images` from here:
delete this module once it imports it from :mod:`.harbor` (issue 17)."""

from __future__ import annotations

from .harbor import base_images

__all__ = ["base_images"]
