"""A BibTeX value (LaTeX) made text: accents (`{\\"u}`, `\\'{e}`, `\\c{c}`), letters (`{\\ss}`,
`\\o`), dashes (`--`), quotes, escapes and protective braces."""

from __future__ import annotations

import re
import unicodedata

# Whitespace, as BibTeX's grammar and LaTeX's commands skip it.
_SPACE = " \t\r\n"


_ACCENTS = {
    "'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
    ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
    "r": "\u030a", "b": "\u0331", "d": "\u0323", "t": "\u0361",
}  # fmt: skip
_LETTERS = {
    "ss": "\N{LATIN SMALL LETTER SHARP S}",
    "o": "\N{LATIN SMALL LETTER O WITH STROKE}",
    "O": "\N{LATIN CAPITAL LETTER O WITH STROKE}",
    "ae": "\N{LATIN SMALL LETTER AE}",
    "AE": "\N{LATIN CAPITAL LETTER AE}",
    "oe": "\N{LATIN SMALL LIGATURE OE}",
    "OE": "\N{LATIN CAPITAL LIGATURE OE}",
    "aa": "\N{LATIN SMALL LETTER A WITH RING ABOVE}",
    "AA": "\N{LATIN CAPITAL LETTER A WITH RING ABOVE}",
    "l": "\N{LATIN SMALL LETTER L WITH STROKE}",
    "L": "\N{LATIN CAPITAL LETTER L WITH STROKE}",
    "i": "\N{LATIN SMALL LETTER DOTLESS I}",
    "j": "\N{LATIN SMALL LETTER DOTLESS J}",
    "dh": "\N{LATIN SMALL LETTER ETH}",
    "DH": "\N{LATIN CAPITAL LETTER ETH}",
    "th": "\N{LATIN SMALL LETTER THORN}",
    "TH": "\N{LATIN CAPITAL LETTER THORN}",
    "ng": "\N{LATIN SMALL LETTER ENG}",
    "NG": "\N{LATIN CAPITAL LETTER ENG}",
    "dj": "\N{LATIN SMALL LETTER D WITH STROKE}",
    "DJ": "\N{LATIN CAPITAL LETTER D WITH STROKE}",
    "textendash": "\N{EN DASH}",
    "textemdash": "\N{EM DASH}",
    "textquoteright": "\N{RIGHT SINGLE QUOTATION MARK}",
    "textquoteleft": "\N{LEFT SINGLE QUOTATION MARK}",
    "textquotedblleft": "\N{LEFT DOUBLE QUOTATION MARK}",
    "textquotedblright": "\N{RIGHT DOUBLE QUOTATION MARK}",
    "ldots": "\N{HORIZONTAL ELLIPSIS}",
    "dots": "\N{HORIZONTAL ELLIPSIS}",
    "textellipsis": "\N{HORIZONTAL ELLIPSIS}",
    "textregistered": "\N{REGISTERED SIGN}",
    "texttrademark": "\N{TRADE MARK SIGN}",
    "copyright": "\N{COPYRIGHT SIGN}",
    "textdegree": "\N{DEGREE SIGN}",
    "textasciitilde": "~",
    "textasciicircum": "^",
    "textbackslash": "\\",
    "textunderscore": "_",
    "textbar": "|",
    "textless": "<",
    "textgreater": ">",
    "S": "\N{SECTION SIGN}",
    "P": "\N{PILCROW SIGN}",
    "pounds": "\N{POUND SIGN}",
    "euro": "\N{EURO SIGN}",
    "textperthousand": "\N{PER MILLE SIGN}",
    "textmu": "\N{MICRO SIGN}",
    "alpha": "\N{GREEK SMALL LETTER ALPHA}",
    "beta": "\N{GREEK SMALL LETTER BETA}",
    "gamma": "\N{GREEK SMALL LETTER GAMMA}",
    "delta": "\N{GREEK SMALL LETTER DELTA}",
    "epsilon": "\N{GREEK SMALL LETTER EPSILON}",
    "varepsilon": "\N{GREEK SMALL LETTER EPSILON}",
    "zeta": "\N{GREEK SMALL LETTER ZETA}",
    "eta": "\N{GREEK SMALL LETTER ETA}",
    "theta": "\N{GREEK SMALL LETTER THETA}",
    "kappa": "\N{GREEK SMALL LETTER KAPPA}",
    "lambda": "\N{GREEK SMALL LETTER LAMDA}",
    "mu": "\N{GREEK SMALL LETTER MU}",
    "nu": "\N{GREEK SMALL LETTER NU}",
    "xi": "\N{GREEK SMALL LETTER XI}",
    "pi": "\N{GREEK SMALL LETTER PI}",
    "rho": "\N{GREEK SMALL LETTER RHO}",
    "sigma": "\N{GREEK SMALL LETTER SIGMA}",
    "tau": "\N{GREEK SMALL LETTER TAU}",
    "phi": "\N{GREEK SMALL LETTER PHI}",
    "varphi": "\N{GREEK SMALL LETTER PHI}",
    "chi": "\N{GREEK SMALL LETTER CHI}",
    "psi": "\N{GREEK SMALL LETTER PSI}",
    "omega": "\N{GREEK SMALL LETTER OMEGA}",
    "Gamma": "\N{GREEK CAPITAL LETTER GAMMA}",
    "Delta": "\N{GREEK CAPITAL LETTER DELTA}",
    "Theta": "\N{GREEK CAPITAL LETTER THETA}",
    "Lambda": "\N{GREEK CAPITAL LETTER LAMDA}",
    "Pi": "\N{GREEK CAPITAL LETTER PI}",
    "Sigma": "\N{GREEK CAPITAL LETTER SIGMA}",
    "Phi": "\N{GREEK CAPITAL LETTER PHI}",
    "Psi": "\N{GREEK CAPITAL LETTER PSI}",
    "Omega": "\N{GREEK CAPITAL LETTER OMEGA}",
    "pm": "\N{PLUS-MINUS SIGN}",
    "times": "\N{MULTIPLICATION SIGN}",
    "leq": "\N{LESS-THAN OR EQUAL TO}",
    "le": "\N{LESS-THAN OR EQUAL TO}",
    "geq": "\N{GREATER-THAN OR EQUAL TO}",
    "ge": "\N{GREATER-THAN OR EQUAL TO}",
    "neq": "\N{NOT EQUAL TO}",
    "approx": "\N{ALMOST EQUAL TO}",
    "sim": "\N{TILDE OPERATOR}",
    "infty": "\N{INFINITY}",
    "rightarrow": "\N{RIGHTWARDS ARROW}",
    "to": "\N{RIGHTWARDS ARROW}",
    "leftarrow": "\N{LEFTWARDS ARROW}",
    "cdot": "\N{MIDDLE DOT}",
    "circ": "\N{RING OPERATOR}",
    "prime": "\N{PRIME}",
}
# Commands whose argument is text shown as it is; `\href{url}{text}` shows its second.
_WRAPPERS = {
    "textbf", "textit", "emph", "textsc", "textrm", "textsf", "texttt", "textup", "textsl",
    "textnormal", "mathrm", "mathit", "mathbf", "mathsf", "mathtt", "mathcal", "mbox", "hbox",
    "text", "url", "NoCaseChange", "MakeUppercase", "MakeLowercase", "uppercase", "lowercase",
}  # fmt: skip
_SPACING = {",": " ", ";": " ", ":": " ", " ": " ", "!": "", "-": "", "/": "", "\\": " "}


def latex_to_text(raw: str, *, ligatures: bool = True) -> str:
    """A BibTeX value as plain text: accents composed (`{\\"u}` → ü, `\\c{c}` → ç), letters
    (`{\\ss}` → ß), escapes (`\\&`), formatting commands' text, math delimiters and protective
    braces dropped, whitespace collapsed; with `ligatures`, `--`/`---` as dashes and TeX's
    quotes as curly ones (not in a DOI)."""
    text = _Latex(raw, ligatures).run()
    return unicodedata.normalize("NFC", " ".join(text.split()))


class _Latex:
    def __init__(self, raw: str, ligatures: bool) -> None:
        self.raw = raw
        self.pos = 0
        self.ligatures = ligatures
        self.math = False

    def run(self, in_group: bool = False) -> str:
        out: list[str] = []
        raw = self.raw
        while self.pos < len(raw):
            char = raw[self.pos]
            if char == "}":
                self.pos += 1
                if in_group:
                    return "".join(out)
                continue
            if char == "{":
                self.pos += 1
                out.append(self.run(in_group=True))
            elif char == "\\":
                out.append(self.command())
            elif char == "$":
                self.math = not self.math
                self.pos += 1
            elif char == "~":
                out.append(" ")
                self.pos += 1
            elif self.math and char in "^_":
                self.pos += 1
            elif self.ligatures and raw.startswith("---", self.pos):
                out.append("\N{EM DASH}")
                self.pos += 3
            elif self.ligatures and raw.startswith("--", self.pos):
                out.append("\N{EN DASH}")
                self.pos += 2
            elif self.ligatures and raw.startswith("``", self.pos):
                out.append("\N{LEFT DOUBLE QUOTATION MARK}")
                self.pos += 2
            elif self.ligatures and raw.startswith("''", self.pos):
                out.append("\N{RIGHT DOUBLE QUOTATION MARK}")
                self.pos += 2
            else:
                out.append(char)
                self.pos += 1
        return "".join(out)

    def command(self) -> str:
        raw = self.raw
        self.pos += 1  # the backslash
        if self.pos >= len(raw):
            return ""
        char = raw[self.pos]
        if not char.isalpha():
            self.pos += 1
            if char in _ACCENTS:
                return self.accented(_ACCENTS[char])
            if char in _SPACING:
                return _SPACING[char]
            return char  # \& \% \$ \# \_ \{ \}
        found = re.match(r"[A-Za-z]+", raw[self.pos :])
        name = found.group() if found else char
        self.pos += len(name)
        if name in _ACCENTS and (self._at("{") or self._space_then_letter()):
            self._skip_space()
            return self.accented(_ACCENTS[name])
        self._skip_space()
        if name in _LETTERS:
            if self._at("{}"):
                self.pos += 2
            return _LETTERS[name]
        if name == "href":
            self.argument()
            return self.argument()
        if name in _WRAPPERS or self._at("{"):
            return self.argument() if self._at("{") else ""
        return ""

    def accented(self, mark: str) -> str:
        base = self.argument()
        # A dotless i or j takes the accent in place of its dot; a tie joins two letters.
        base = {
            "\N{LATIN SMALL LETTER DOTLESS I}": "i",
            "\N{LATIN SMALL LETTER DOTLESS J}": "j",
        }.get(base[:1], base[:1]) + base[1:]
        return base[:1] + mark + base[1:] if base else mark

    def argument(self) -> str:
        """The next argument: a group, a command, or one character."""
        self._skip_space()
        if self.pos >= len(self.raw):
            return ""
        char = self.raw[self.pos]
        if char == "{":
            self.pos += 1
            return self.run(in_group=True)
        if char == "\\":
            return self.command()
        self.pos += 1
        return char

    def _at(self, char: str) -> bool:
        return self.raw.startswith(char, self.pos)

    def _space_then_letter(self) -> bool:
        return bool(re.match(r"\s+[A-Za-z\\]", self.raw[self.pos :]))

    def _skip_space(self) -> None:
        while self.pos < len(self.raw) and self.raw[self.pos] in _SPACE:
            self.pos += 1
