"""What makes two names one name, and two tasks one problem: the one definition of identity that the
benchmark sets (:mod:`.sets`) and the A/B comparison (:mod:`.ab`, :mod:`.ab_claims`) share.

**Names** (a ``change_under_test``, a benchmark family's id) are compared by :func:`text_key`, a
canonical form that folds the respellings below (and, before NFKC: text reversed inside a right-to-left
override read as it shows, Latin small capitals as their letters, the Greek lunate sigma as a "c"):

- Unicode compatibility form (NFKC): full-width, ligatures, mathematical letters, superscripts;
- invisible characters removed: every format character (category Cf: zero-width space and joiners,
  the byte-order mark, soft hyphen, bidirectional controls, tags), control, private-use and
  surrogate characters, the fillers that render as nothing (Hangul fillers, the blank Braille
  pattern) and every combining mark (accents, variation selectors, the combining grapheme joiner);
- look-alike letters mapped to one skeleton (UTS #39): a Cyrillic ``а``, a Greek ``ο``, a Cherokee
  or Armenian look-alike of a Latin letter or digit becomes that Latin letter, by a table derived
  from Unicode's ``confusables.txt`` (:data:`CONFUSABLES`, see :func:`derive_table`); the table is
  applied before and after case folding, so a capital look-alike (Greek ``Υ``: ``Y``) and a small one
  (Greek ``υ``: ``u``) each map to what they look like;
- case folded, and the Latin look-alikes that only differ by case folded into one class: ``1``,
  ``i``, ``I``, ``l`` and ``|`` are one letter, ``0`` and ``o`` one, ``m`` is ``rn``;
- punctuation, symbols of ASCII and whitespace removed: ``retry on failure``, ``retry, on failure``,
  ``Retry-On-Failure`` and ``retryonfailure`` are one name.

Folding punctuation also folds signs: ``+20%`` and ``-20%``, ``1e-3`` and ``1e3``, ``C++`` and ``C`` share a key.
Undeclared they are one change (the safe side, below); :func:`symbol_key` keeps the signs, and two
spellings whose symbol keys differ may be declared ``different_from`` each other, with the reason, which
splits their families (``ab preregister``). Spellings that differ by no sign never split.

Folding more than UTS #39 does errs on the safe side: two names wrongly made one join one Holm family
(more correction, never less) or one benchmark family (no replication claimed between them), and a
near-duplicate must be declared by whoever preregisters it (:func:`near_keys`, ``ab preregister``).

**Problems** are compared by :func:`problem_key`, by content, not by names: the base commit (a commit id
is a hash of the repository's content, so a renamed or copied repository keeps it; full or abbreviated
to 7 digits, it is one commit), the gold patch and the test patch as the lines they remove and add
where (context lines, hunk splits, ``index`` lines, timestamps, ``a/`` and ``b/`` prefixes, line
endings and runs of whitespace do not change a patch), and the FAIL_TO_PASS and PASS_TO_PASS lists,
sorted. The id, the dates, the repository's name
and the statement are left out: a copy under a new id, a reworded statement or a renamed repository is
the same problem. Only a task with neither a base commit nor a patch (nothing locates its content) is
told apart by its repository's and statement's :func:`text_key`.

A copy can also change one *part* of a task: drop a PASS_TO_PASS id, add a comment line to the gold
patch, or move it to another commit with the same tree (a rebase, a re-import). So a problem has more
keys (:func:`problem_keys`): beside the whole task's, one for its **fix** (the gold patch's code) and one
for its **tests** (the test patch's code with the FAIL_TO_PASS list), each as code: comment-only and
blank changed lines and trailing comments dropped, every change anchored at the line of the original
file where it applies (so an added line moves no other). Two tasks that share any key are one problem;
on SWE-bench Lite's 300 tasks no two do. A copy that rewrites the code of both its fix and its tests is
not caught: it is, by then, another task.

Pure functions; this module never imports pytest.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

__all__ = ["CONFUSABLES", "FACET_PREFIXES", "PROBLEM_KEY_PREFIX", "derive_table", "edit_distance", "near_keys",
           "problem_facets", "problem_key", "problem_keys", "shown_name", "symbol_key", "text_key"]

# Derived from Unicode's confusables.txt (Unicode Security Mechanisms for UTS #39, version 17.0.0,
# dated 2025-07-22; https://www.unicode.org/Public/security/17.0.0/confusables.txt), (c) 2025 Unicode, Inc.,
# used under the Unicode License v3 (https://www.unicode.org/license.txt), by :func:`derive_table`: every
# entry whose source is one character outside ASCII and whose prototype, folded as :func:`text_key` folds,
# is Latin letters and digits only (or nothing: a look-alike of punctuation). Each key is what a source
# becomes; each value lists the sources' code points. No PyPI package provides a maintained UTS #39
# skeleton (confusable-homoglyphs ships the data for detection only, as an 884 kB JSON it loads on import).
CONFUSABLES: Final[Mapping[str, str]] = {
    "": (
        "02B9 02BA 02BB 02BC 02BD 02BE 02C2 02C3 02C4 02C6 02C8 02CA 02CB 02D0 02D7 02EE 02F4 02F6 02F8 0345 "
        "07F4 07F5 07FA 0903 0A83 1AD9 1AE2 1AE8 2044 2212 2214 2215 2216 2217 2219 2236 2238 223C 2250 2251 "
        "2257 2259 225A 225E 226A 226B 22C5 22D6 22D7 22D8 22D9 22EF 2368 244A 2571 26AC 2795 2796 27CB 27CD "
        "29F5 29F6 29F8 29F9 2A20 2A22 2A23 2A24 2A25 2A26 2A29 2A2A 2A6A 2A6E 2AA5 2AFB 2AFD 2B96 3033 31D3 "
        "31D4 31DB A4F8 A4F9 A4FA A4FB A4FD A789 11B60 11B66 11DD9 16F51 16F52 1D114 1D16D 1D20F 1D236 1D237 "
        "1D23A 1D23B 1E6E9 1E6EE 1F10F"
    ),
    "2": "01A7 01BB 03E8 14BF 2A27 A644 A6EF A75A 1CCF2",
    "3": "01B7 021C 0417 0498 04E0 0969 0AE9 2C9C 2CC4 2CCC A76A A7AB 118CA 16F3B 1CCF3 1D206",
    "4": "13CE 152F 1530 118AF 1CCF4",
    "5": "01BC 118BB 1CCF5",
    "6": "03EC 0431 13EE 2CD2 2CD3 2CDC 118D5 1CCF6",
    "7": "104D2 118C6 1CCF7 1D212",
    "8": "0222 0223 09EA 0A6A 0B03 1031A 1CCF8 1E8CB",
    "9": "09ED 0A67 0B68 0D6D 2CCA 2CCB A76E 118AC 118CC 118D6 1CCF9",
    "a": "0251 0391 03B1 0410 0430 13AA 15C5 2376 237A A4EE 102A0 16F40 1CCD6",
    "aa": "A732 A733",
    "ae": "00C6 00E6 04D4 04D5",
    "ao": "A734 A735",
    "ar": "1F707",
    "au": "A736 A737",
    "av": "A738 A739 A73A A73B",
    "ay": "A73C A73D",
    "b": (
        "0180 0181 0182 0183 0184 0253 0392 0411 0412 042C 0462 0463 048C 048D 13CF 13F4 1472 1473 147E 147F "
        "1480 1481 1488 15AF 15F7 2C82 A4D0 A7B4 10282 102A1 10301 16EB6 1CCD7"
    ),
    "bl": "042B",
    "c": (
        "00A2 0187 023C 0421 0441 04AA 04AB 1004 105A 13DF 1D04 20A1 2CA4 2CA5 A4DA ABAF 102A2 10302 10415 "
        "1043D 1051C 118E9 118F2 1CCD8 1F16E 1F74C"
    ),
    "cc": "1F16D",
    "d": (
        "00D0 0110 0111 0189 018A 018C 0256 0257 0501 13A0 13E7 146F 147A 147B 1487 15DE 15EA 20AB A4D2 A4D3 "
        "1CCD9"
    ),
    "dz": "02A3",
    "e": "0246 0247 0395 0415 0435 04BD 04BF 13AC 212E 22FF 2D39 A4F0 AB32 10286 118A6 118AE 1CCDA",
    "f": "0191 0192 03DC 0584 15B4 1D6E 1E9D A4DD A798 A799 AB35 10287 102A5 10525 118A2 118C2 1CCDB 1D213",
    "fn": "02A9",
    "g": "018D 0193 01E4 01E5 0260 0261 050C 0581 13C0 13F3 1D83 A4D6 1CCDC",
    "h": (
        "0126 0127 0266 0397 041D 045B 04A2 04BB 04C7 04C9 0570 13BB 13C2 13F2 157C 2C67 2C8E A4E7 A695 102CF "
        "1CCDD"
    ),
    "j": "0248 0249 037F 03F3 0408 0458 13AB 148D 1498 1499 A4D9 A7B2 1CCDF",
    "k": "0198 0199 039A 041A 049A 049E 13E6 16D5 20AD 2C69 2C94 A4D7 A740 10518 1CCE0",
    "l": (
        "0131 0141 0142 0196 0197 019A 01C0 0268 0269 026A 026B 026D 0399 03B9 0406 0456 04C0 04CF 0582 05C0 "
        "05D5 05DF 05F1 0625 0627 0661 0673 06F1 07CA 13A5 13DE 14AA 14B6 14B7 16C1 1D7B 1D7C 2223 2373 2378 "
        "23FD 2C92 2C93 2CD0 2D4F A4E1 A4F2 A647 AB75 1028A 10309 10320 1041B 10526 118A3 118B2 118C3 11DDA "
        "11DE1 16EAA 16F16 16F28 1CCDE 1CCE1 1CCF1 1D22A 1E8C7"
    ),
    "ll": "01C1 05F0 2016 2225 10199",
    "lls": "10198",
    "lo": "042E 23E8",
    "ls": "02AA",
    "lt": "20B6",
    "lz": "02AB",
    "n": "014B 019D 019E 0273 039D 03B7 0572 0578 057C 1D70 2C9A A4E0 1018E 10513 1CCE3",
    "o": (
        "00D8 00F8 019F 01FE 0275 0398 039F 03B8 03BF 03C3 03ED 041E 043E 0472 0473 04E8 04E9 0555 0585 05E1 "
        "0647 0665 06BE 06C1 06D5 06F5 06FF 07C0 0966 09E6 0A66 0AE6 0B20 0B66 0BE6 0C02 0C66 0C82 0CE6 0D02 "
        "0D20 0D66 0D82 0E50 0ED0 101D 1040 10FF 12D0 13A4 13BE 13EB 17E0 1D0F 1D11 2296 229D 236C 2C90 2C91 "
        "2C9E 2C9F 2D31 2D41 2D54 3007 A4F3 A74A A74B AB3D AB3E AB74 AB8E ABBB 10292 102AB 10404 1042C 104C2 "
        "104EA 10516 114D0 118B5 118C8 118D7 118E0 11DE0 1CCE4 1CCF0 1D21A 1F714"
    ),
    "oe": "0152 0153",
    "oo": "066A 2052 221E A698 A699 A74E A74F",
    "ooo": "0609 2030",
    "oooo": "060A 2031",
    "p": (
        "00FE 01A4 01A5 01BF 03A1 03C1 03F8 0420 0440 13E2 146D 1476 1477 1486 1D7D 2374 2CA2 2CA3 2CCE 2CCF "
        "A4D1 10295 1CCE5"
    ),
    "q": "02A0 051B 0563 0566 2D55 1CCE6",
    "qe": "1F700",
    "r": (
        "01A6 024D 027C 027D 0433 0491 0493 13A1 13D2 1587 1D26 1D72 2C85 A4E3 AB47 AB48 AB81 104B4 16F35 "
        "1CCE7 1D216"
    ),
    "rn": "0271 039C 03FA 041C 04CD 13B7 15F0 16D6 1D6F 20A5 2C98 A4DF 102B0 10311 11700 118E3 1CCE2",
    "rnb": "1F76B",
    "s": "01BD 0282 0405 0455 054F 0D1F 13D5 13DA 1D74 A4E2 A731 ABAA 10296 10420 10448 118C1 16F3A 1CCE8",
    "ss": "03B2 13F0 A7B5 A7D6",
    "sss": "1F75C",
    "t": (
        "0166 0167 01AC 01AD 01AE 023E 03A4 0422 04AC 13A2 1D75 20AE 22A4 2361 27D9 2CA6 A4D4 10297 102B1 "
        "10315 118BC 16F0A 1CCE9 1F768"
    ),
    "t3": "A728",
    "tf": "A777",
    "ts": "02A6",
    "u": (
        "0244 028B 03C5 045F 054D 057D 1200 13CC 144C 1457 1458 1467 1D1C 1D7E 222A 22C3 A4F4 A79F AB4E AB52 "
        "AB9C 104CE 104F6 118B8 118D8 16F42 1CCEA"
    ),
    "ue": "1D6B",
    "uo": "AB63",
    "v": (
        "03BD 0474 0475 05D8 0667 06F7 13D9 142F 143A 143B 1D20 2228 22C1 2D38 A4E6 A6DF ABA9 10197 1051D "
        "11706 118A0 118C0 16F08 1CCEB 1D20D 1F708"
    ),
    "vb": "1F76C",
    "w": (
        "026F 0448 0461 047D 051C 051D 0561 13B3 13D4 1D21 20A9 2CBD A4EA A761 AB83 114C5 1170A 1170E 1170F "
        "118E6 118EF 1CCEC"
    ),
    "x": (
        "00D7 03A7 0425 0445 04B2 1541 157D 166D 166E 16B7 2573 292B 292C 2A2F 2A30 2CAC 2D5D A4EB A7B3 10196 "
        "10290 102B4 10317 10322 10527 118EC 1CCED"
    ),
    "y": (
        "00A5 01B3 01B4 024E 024F 0263 028F 03A5 03B3 0423 0443 04AE 04AF 04B0 04B1 10E7 13A9 13BD 1D8C 1EFF "
        "2CA8 2CA9 A4EC AB5A 102B2 118A4 118DC 16F43 1CCEE"
    ),
    "z": "01B5 01B6 0224 0225 0290 0396 13C3 1D22 1D76 A4DC AB93 102F5 118A9 118C4 118E5 1CCEF",
}  # fmt: skip

# Characters that render as nothing but are letters or symbols (not Cf): the Hangul fillers and the blank
# Braille pattern. Combining marks (the combining grapheme joiner, variation selectors) go with every mark.
BLANKS: Final = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800})
DROPPED_CATEGORIES: Final = frozenset({"Mn", "Me", "Cc", "Cf", "Co", "Cs", "Zs", "Zl", "Zp"})
# the Latin look-alikes that differ only by case once folded (UTS #39 maps I, 1 and | to l, 0 to O, m to rn)
ASCII_CLASSES: Final = str.maketrans({"i": "l", "1": "l", "0": "o", "m": "rn"})
PROBLEM_KEY_PREFIX: Final = "problem-v2:sha256:"
# A letter or digit of its own script that looks like punctuation (Hiragana ku, Hebrew yod) stays in a key;
# a modifier letter that does (the modifier apostrophe) is dropped with the punctuation it imitates.
LETTERS_KEPT: Final = frozenset({"Lu", "Ll", "Lt", "Lo", "Nd", "Nl", "No"})


@lru_cache(maxsize=1)
def _table() -> dict[str, str]:
    return {chr(int(point, 16)): target for target, points in CONFUSABLES.items() for point in points.split()}


def _keep(char: str, table: Mapping[str, str]) -> str:
    """What one character (case folded, decomposed) contributes to a key."""
    mapped = table.get(char)
    if mapped is not None:
        return mapped
    if char == "|":
        return "l"
    if char.isascii():
        return char if char.isalnum() else ""
    if unicodedata.category(char) in DROPPED_CATEGORIES or unicodedata.category(char)[0] == "P" or char.isspace():
        return ""
    return "" if ord(char) in BLANKS else char


# Look-alikes that NFKC would first turn into another letter's look-alike (the Greek lunate sigma is a
# "c" to the eye, but NFKC makes it a sigma, which looks like an "o"): mapped before NFKC.
BEFORE_NFKC: Final = {"\u03f2": "c", "\u03f9": "C", "\u03f3": "j"}
RLO, PDF = "\u202e", "\u202c"  # right-to-left override and its end: the text between shows reversed


def _as_shown(text: str) -> str:
    """``text`` in the order a reader sees it: each run after a right-to-left override (to its pop or the
    end) reversed (``\u202ekcehc`` shows as "check")."""
    out, rest = [], text
    while RLO in rest:
        before, _, after = rest.partition(RLO)
        inside, popped, rest = after.partition(PDF)
        out += [before, inside[::-1]]
        if not popped:
            rest = ""
    return "".join(out) + rest


def _small_capital(char: str) -> str:
    """A Latin small capital letter (``ᴀ``, ``ʜ``, ``ꜰ``) as the letter it is."""
    name = unicodedata.name(char, "")
    if name.startswith("LATIN LETTER SMALL CAPITAL ") and len(name) == len("LATIN LETTER SMALL CAPITAL ") + 1:
        return name[-1].lower()
    return char


def _fold(text: str, table: Mapping[str, str]) -> str:
    text = "".join(_small_capital(BEFORE_NFKC.get(char, char)) for char in _as_shown(text))
    text = unicodedata.normalize("NFKC", text)
    text = "".join(table.get(char, char) for char in text)  # look-alikes as written: capital Greek Y is Y
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    return "".join(_keep(char, table) for char in text).translate(ASCII_CLASSES)


def text_key(text: str) -> str:
    """The canonical form of a name (see the module docstring): two names are one when their keys are
    equal. ``text_key("SYNTH-A") == text_key("synth a") == text_key("ѕуnth-а")`` (Cyrillic)."""
    return _fold(text, _table())


# The signs whose presence changes what a name says (``+20%`` and ``-20%``, ``1e-3`` and ``1e3``, ``C++``
# and ``C``), and the look-alikes of each that NFKC leaves alone, for :func:`symbol_key`.
SIGNS: Final = frozenset("+-*/<>=^~!%#&@.")
SIGN_LOOKALIKES: Final = {"\u2212": "-", "\u2796": "-", "\u02d7": "-", "\u2052": "-", "\u2795": "+", "\u02d6": "+",
                          "\u066a": "%", "\u2217": "*", "\u2215": "/", "\u2044": "/"}  # fmt: skip


def _sign(char: str) -> str | None:
    """The sign ``char`` is (a dash of any kind is a minus), or None."""
    if char in SIGNS:
        return char
    return "-" if unicodedata.category(char) == "Pd" else SIGN_LOOKALIKES.get(char)


def _visible(text: str) -> str:
    """``text`` without what shows as nothing (spaces, format and control characters, marks, fillers)."""
    return "".join(c for c in text if unicodedata.category(c) not in DROPPED_CATEGORIES and ord(c) not in BLANKS
                   and not c.isspace())  # fmt: skip


def symbol_key(text: str) -> str:
    """:func:`text_key` with the signs kept that change what a name says: ``+ - * / < > = ^ ~ ! % # & @``
    and a dot between digits (a dash of any kind, a minus sign and their look-alikes are ``-``); a
    hyphen between letters, and every other punctuation, stays a separator. Two names with one
    :func:`text_key` are one change unless their symbol keys differ *and* a manifest declares them
    ``different_from`` each other, with the reason (``+20%`` and ``-20%`` can be told apart that way;
    ``retry-on-failure`` and ``Retry On Failure`` never)."""
    table = _table()
    marked = "".join(f"\x00{sign}\x00" if (sign := _sign(char)) else char
                     for char in unicodedata.normalize("NFKC", _as_shown(text)))  # fmt: skip
    parts = marked.split("\x00")  # text, sign, text, sign, ...: each text run folded as text_key folds it
    out = []
    for index, part in enumerate(parts):
        if not index % 2:
            out.append(_fold(part, table))
            continue
        before = _visible("".join(parts[:index:2]))[-1:]  # the text next to the sign, as it shows
        after = _visible("".join(parts[index + 1::2]))[:1]
        if (part == "-" and before.isalpha() and after.isalpha()) or (part == "." and not (before.isdigit() and after.isdigit())):
            continue
        out.append(part)
    return "".join(out)


def shown_name(text: str) -> str:
    """A name as a reader can tell it from its look-alikes: quoted, and escaped past printable ASCII (a
    Cyrillic ``о`` shows as ``\\u043e``, a zero-width space as ``\\u200b``)."""
    return repr(text) if text.isascii() and text.isprintable() else ascii(text)


def derive_table(confusables_txt: str) -> dict[str, str]:
    """:data:`CONFUSABLES` from the text of Unicode's ``confusables.txt`` (how the table was made, and how
    to make it again for a later Unicode version): each source outside ASCII whose prototype folds to
    Latin letters and digits only (or to nothing: punctuation, unless the source is a letter or a digit), unless
    NFKC already changes it or it folds to that by itself."""
    found: dict[str, list[str]] = {}
    for line in confusables_txt.splitlines():
        fields = [f.strip() for f in line.split("#", 1)[0].split(";")]
        if len(fields) < 2 or not fields[0]:
            continue
        source = "".join(chr(int(point, 16)) for point in fields[0].split())
        prototype = "".join(chr(int(point, 16)) for point in fields[1].split())
        if len(source) != 1 or source.isascii() or unicodedata.normalize("NFKC", source) != source:
            continue
        target = _fold(prototype, {})
        if not target and unicodedata.category(source) in LETTERS_KEPT:  # a letter of its own script, never dropped
            continue
        if re.fullmatch("[a-z0-9]*", target) and _fold(source, {}) != target:
            found.setdefault(target, []).append(f"{ord(source):04X}")
    return {target: " ".join(sorted(points, key=lambda p: int(p, 16))) for target, points in sorted(found.items())}


def edit_distance(a: str, b: str, limit: int) -> int | None:
    """The Levenshtein distance between ``a`` and ``b`` when it is at most ``limit``, else None."""
    if abs(len(a) - len(b)) > limit:
        return None
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        if min(current) > limit:
            return None
        previous = current
    return previous[-1] if previous[-1] <= limit else None


def near_keys(a: str, b: str) -> int | None:
    """How many edits apart two different keys are, when they are close enough to be one name misspelt
    or disguised: at most 2 edits when the shorter has 10 characters or more, 1 from 5 characters, none
    below (``retry-v1`` and ``retry-v2`` are near: say whether they are one change)."""
    shorter = min(len(a), len(b))
    limit = 2 if shorter >= 10 else 1 if shorter >= 5 else 0
    if limit == 0 or a == b:
        return None
    return edit_distance(a, b, limit)


# ---------------------------------------------------------------------- problems


def _tests(value: Any) -> list[str]:
    """A FAIL_TO_PASS or PASS_TO_PASS list (or SWE-bench's JSON string of one), each id's whitespace
    runs made one space, sorted."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = [value]
    if not isinstance(value, (list, tuple)):
        return []
    return sorted(" ".join(str(test).split()).removeprefix("./") for test in value)


def _strip_prefix(path: str | None, prefix: str) -> str:
    """A patched file's name without its side's prefix: git's ``a/`` and ``b/``, or any one-letter one
    (``diff.mnemonicPrefix`` writes ``i/``, ``w/``, ``c/``, ``o/``)."""
    path = " ".join((path or "").split())
    return re.sub(r"^[a-z]/", "", path) if path != "/dev/null" else path


def _patch(text: Any) -> Any:
    """A patch as what it changes: per file (sorted), each line removed and added, with its line number,
    whitespace runs made one space; None for no patch. A text unidiff cannot read whole (a changed line
    outside any hunk, a binary payload) is compared as its lines, without ``index`` lines, whitespace runs
    made one space."""
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n") + "\n"  # blank lines at its end change nothing
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    lines = text.split("\n")
    try:
        files = PatchSet(text)
    except (UnidiffParseError, ValueError, TypeError):
        files = None
    signs = sum(line[:1] in ("+", "-") for line in lines) - sum(line.startswith(("--- ", "+++ ")) for line in lines)
    if (not files or any(patched.is_binary_file for patched in files)
            or signs != sum(line.line_type in ("+", "-") for patched in files for hunk in patched for line in hunk)):  # fmt: skip
        # not a patch unidiff reads whole (a line it would skip, a binary payload it does not keep): its lines
        kept = [" ".join(line.split()) for line in lines if not line.startswith("index ")]
        return {"unparsed": [line for line in kept if line]}
    changed = []
    for patched in files:
        changes = []
        for hunk in patched:
            source, target = hunk.source_start, hunk.target_start
            for line in hunk:
                if line.line_type == "-":
                    changes.append(["-", source, " ".join(line.value.split())])
                if line.line_type == "+":
                    changes.append(["+", target, " ".join(line.value.split())])
                source += line.line_type in ("-", " ")
                target += line.line_type in ("+", " ")
        changed.append([_strip_prefix(patched.source_file, "a/"), _strip_prefix(patched.target_file, "b/"),
                        sorted(changes)])  # hunks in any order apply alike  # fmt: skip
    return sorted(changed)


def _commit(value: Any) -> str | None:
    """A base commit: a hexadecimal commit id by its first 7 digits (git's shortest abbreviation: the full
    and an abbreviated id are one commit; the patches and tests tell any two commits sharing 7 digits
    apart), any other name (a tag) as written, without surrounding whitespace."""
    text = value.strip().lower() if isinstance(value, str) else ""
    return text[:7] if re.fullmatch("[0-9a-f]{7,64}", text) else (text or None)


# A changed line that is only a comment (or blank) does not change what a patch fixes: dropped from a facet,
# with a comment at the end of a code line. Erring towards one problem only ever burns more.
COMMENT_LINE: Final = re.compile(r"^\s*(#(?!!)|//|/\*|\*(\s|/|$)|--\s|;;)|^\s*$")
TRAILING_COMMENT: Final = re.compile(r"\s+(#|//)(?!.*[\"']).*$")
FACET_PREFIXES: Final = ("problem-fix-v1:sha256:", "problem-tests-v1:sha256:")


def _code(line: str) -> str | None:
    """A changed line as code: whitespace runs one space, a trailing comment dropped; None when the line
    is only a comment or blank."""
    if COMMENT_LINE.match(line):
        return None
    return " ".join(TRAILING_COMMENT.sub("", line).split()) or None


def _anchored(text: Any) -> Any:
    """A patch as the code it changes, anchored where it changes it in the file it is applied to: each
    removed line at its line number, each added line at the line it is inserted before, so that an added
    comment line (dropped) moves no other line; per file, sorted. None for no patch or nothing but comments."""
    if not isinstance(text, str) or not text.strip():
        return None
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    text = text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n") + "\n"
    try:
        files = list(PatchSet(text))
    except (UnidiffParseError, ValueError, TypeError):
        files = []
    changed: list[Any] = []
    for patched in files:
        changes = []
        for hunk in patched:
            source = hunk.source_start
            for line in hunk:
                code = _code(line.value) if line.line_type in ("-", "+") else None
                if code is not None:
                    changes.append([line.line_type, source, code])
                source += line.line_type in ("-", " ")
        if changes:
            changed.append([_strip_prefix(patched.target_file if patched.source_file == "/dev/null" else patched.source_file, "a/"),
                            sorted(changes)])  # fmt: skip
    if not files:  # not a patch unidiff reads: its lines (a changed line without its sign) as code, in order
        kept = [_code(line[1:] if line[:1] in ("+", "-") and not line.startswith(("+++", "---")) else line)
                for line in text.split("\n") if not line.startswith("index ")]  # fmt: skip
        changed = [["unparsed", [line for line in kept if line]]] if any(kept) else []
    return sorted(changed) or None


def problem_facets(fields: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys of a problem's parts, each enough to say two tasks are one problem (see the module
    docstring): its **fix** (the gold patch's code, anchored, comments dropped) and its **tests** (the test
    patch's code, anchored, comments dropped, with the sorted FAIL_TO_PASS list). A copy that changes one
    part (a PASS_TO_PASS id dropped, a comment added to the gold patch, the same tree under another commit
    id) keeps the other part's key. A part the task lacks (no gold patch, no test patch) has no key."""
    fix, tests = _anchored(fields.get("patch")), _anchored(fields.get("test_patch"))
    parts = [(FACET_PREFIXES[0], fix), (FACET_PREFIXES[1], {"test_patch": tests, "FAIL_TO_PASS": _tests(fields.get("FAIL_TO_PASS"))}
                                      if tests is not None else None)]  # fmt: skip
    return tuple(prefix + hashlib.sha256(json.dumps(part, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                                         .encode("utf-8")).hexdigest() for prefix, part in parts if part is not None)  # fmt: skip


def problem_keys(fields: Mapping[str, Any]) -> tuple[str, ...]:
    """Every key of a problem: :func:`problem_key` and its :func:`problem_facets`. Two tasks are one
    problem when they share any one of them."""
    return (problem_key(fields), *problem_facets(fields))


def problem_key(fields: Mapping[str, Any]) -> str:
    """A problem's identity by content (see the module docstring): ``problem-v2:sha256:`` and a digest of
    its base commit, gold and test patches (as the lines they change) and sorted test lists. The id, the
    dates, the statement and the repository's name are left out, unless the task has neither a base
    commit nor a patch: then its repository and statement (by :func:`text_key`) tell it apart."""
    content: dict[str, Any] = {
        "base_commit": _commit(fields.get("base_commit")),
        "patch": _patch(fields.get("patch")),
        "test_patch": _patch(fields.get("test_patch")),
        "FAIL_TO_PASS": _tests(fields.get("FAIL_TO_PASS")),
        "PASS_TO_PASS": _tests(fields.get("PASS_TO_PASS")),
    }
    if content["base_commit"] is None and content["patch"] is None and content["test_patch"] is None:
        named = {key: fields.get(key) for key in ("repo", "problem_statement")}
        content["named"] = {key: text_key(value) if isinstance(value, str) else None for key, value in named.items()}
    body = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return PROBLEM_KEY_PREFIX + hashlib.sha256(body.encode("utf-8")).hexdigest()
