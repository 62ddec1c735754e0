"""LLVM assembly as tokens, for rewrites that must keep everything they do not touch.

Why a tokenizer and not a parser: the upgrade (``upgrade.py``) reads LLVM 9 text, which no
parser on this machine reads any more (LLVM 22 has no typed pointers), and it changes only a
few constructs — pointer types, some attributes, some constant expressions — so it works on
the token stream and writes every other token back exactly as it was, with its whitespace
and comments. Each token remembers the line of the original text it came from: the upgrade
never adds or removes a newline, so a line of its output is the same line of its input, and
every error can name the line of the original.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# One token each, with the whitespace and comments before it.
_TOKEN = re.compile(
    r"""
    ((?:[ \t\r\n]|;[^\n]*)*+)                   # whitespace and comments (possessive: no backtracking)
    ([%@$!#]?c?"[^"]*"                          # strings, quoted names: "a", %"a b", c"..\00"
      | [%@$!#][-a-zA-Z$._0-9]+                 # names: %x, @f, !dbg, !0, #0, $comdat
      | \.\.\.                                  # varargs
      | -?0x[KLMHR]?[0-9A-Fa-f]+                # hexadecimal constants
      | -?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?  # numbers
      | [-a-zA-Z$._][-a-zA-Z$._0-9]*            # keywords, types, labels
      | [^ \t\r\n;]                             # punctuation: ( ) [ ] { } < > , = * ! : |
    )?                                          # (none: the end of the text)
    """,
    re.X,
)
OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
CLOSE = {v: k for k, v in OPEN.items()}


@dataclass(slots=True)
class Token:
    """One token: its text, the whitespace and comments before it, its original line.
    ``pointee``: for a ``ptr`` the upgrade made of ``T*``, the text of ``T``."""

    text: str
    ws: str
    line: int
    pointee: str | None = None


def tokenize(text: str) -> tuple[list[Token], str]:
    """The tokens of ``text`` and what follows the last one (whitespace, comments)."""
    tokens: list[Token] = []
    line = 1
    for m in _TOKEN.finditer(text):
        ws, tok = m.group(1, 2)
        if tok is None:
            return tokens, ws
        if ws:
            line += ws.count("\n")
        tokens.append(Token(tok, ws, line))
    return tokens, ""


def untokenize(tokens: list[Token], tail: str) -> str:
    """The text of ``tokens`` (the inverse of ``tokenize``)."""
    return "".join(t.ws + t.text for t in tokens) + tail


def spell(tokens: list[Token]) -> str:
    """``tokens`` as one line of text (their whitespace collapsed to single spaces)."""
    return "".join((" " if k and t.ws else "") + t.text for k, t in enumerate(tokens))


def match_back(tokens: list[Token], close: int) -> int | None:
    """The index of the bracket that ``tokens[close]`` closes, or ``None``."""
    stack = [tokens[close].text]
    k = close - 1
    while k >= 0:
        t = tokens[k].text
        if t in CLOSE:
            stack.append(t)
        elif t in OPEN:
            if OPEN[t] != stack[-1]:
                return None
            stack.pop()
            if not stack:
                return k
        k -= 1
    return None


def match_forward(tokens: list[Token], open_: int) -> int | None:
    """The index of the bracket closing ``tokens[open_]``, or ``None``."""
    stack = [tokens[open_].text]
    for k in range(open_ + 1, len(tokens)):
        t = tokens[k].text
        if t in OPEN:
            stack.append(t)
        elif t in CLOSE:
            if CLOSE[t] != stack[-1]:
                return None
            stack.pop()
            if not stack:
                return k
    return None


__all__ = ["Token", "match_back", "match_forward", "spell", "tokenize", "untokenize"]
