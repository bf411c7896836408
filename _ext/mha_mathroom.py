"""Room for each inline formula before MathJax draws it, so the text does not jump (layout shift).

MathJax typesets the page's formulas about 2 s after a phone-class CPU (4x slower) has shown the
text. Until then each inline formula is its TeX source, ``\\(d_{\\text{model}}\\)``, several times
wider than the drawn formula; when it is replaced, the rest of the paragraph and every line below
move (chapter 07's layout shift was 0.17, chapter 04's 0.15; 0.1 is "good"). This gives each
``<span class="math">`` of a page an estimate of the drawn width (``--tex-w``, in em, from
:func:`tex_width`), and ``mha-theme.css`` keeps that room, with the source hidden, until MathJax
has drawn it. On the book's 1,506 inline formulas the estimate is off by 0.18 em (median) and
0.31 em (mean); the source was off by several em.
"""
from __future__ import annotations

import html
import re

# A linear fit of tex_width to the widths MathJax 3 (CHTML) draws, measured on the built book.
SCALE, OFFSET = 1.32, 0.1
_INLINE = re.compile(r'<span class="math notranslate nohighlight">\\\((.*?)\\\)</span>', re.S)


def tex_width(tex: str) -> float:
    """A rough width, in em, of an inline TeX formula as MathJax draws it."""
    s = tex
    s = re.sub(r'\\(?:text|mathrm|operatorname|textbf|mathbf|texttt|mathit)\s*\{([^{}]*)\}', lambda m: '\x01'*len(m[1]), s)  # upright text
    s = re.sub(r'\\(?:left|right|big|Big|bigl|bigr|Bigl|Bigr|displaystyle|scriptstyle|,|;|!|:|quad|qquad)', lambda m: {'\\quad':'  ','\\qquad':'    ','\\,':' ','\\;':' ','\\:':' '}.get(m[0], ''), s)
    w = 0.0
    i, level, stack = 0, 0, []
    while i < len(s):
        c = s[i]
        scale = 0.7 if level else 1.0
        if c in '_^':
            i += 1
            if i < len(s) and s[i] == '{':
                stack.append(level); level += 1; i += 1
            else:
                # a single token at script size
                j = i
                if j < len(s) and s[j] == '\\':
                    m = re.match(r'\\[A-Za-z]+', s[j:]); tok = m[0] if m else s[j:j+2]
                else: tok = s[j:j+1]
                w += 0.7 * (1.0 if tok.startswith('\\') else 0.55)
                i = j + len(tok)
            continue
        if c == '{': stack.append(level); i += 1; continue
        if c == '}': level = stack.pop() if stack else 0; i += 1; continue
        if c == '\\':
            m = re.match(r'\\([A-Za-z]+)', s[i:])
            if m:
                name = m[1]
                if name in ('frac', 'tfrac', 'dfrac'):
                    w += 0.2 * scale
                elif name in ('sqrt',):
                    w += 0.9 * scale
                elif name in ('cdot','times','le','leq','ge','geq','approx','to','in','neq','ne','mapsto','rightarrow','Rightarrow','sim','equiv','pm'):
                    w += 1.2 * scale
                elif name in ('top',):
                    w += 0.7 * scale
                elif name in ('ldots','dots','cdots'):
                    w += 1.2 * scale
                elif name in ('sum','prod','max','min','log','exp','softmax','arg','det'):
                    w += {'sum':1.1,'prod':1.1,'max':1.7,'min':1.6,'log':1.3,'exp':1.6,'arg':1.3,'det':1.4}.get(name,1.5) * scale
                elif name in ('mathbb','mathcal','hat','tilde','bar','vec','boldsymbol','mathbf'):
                    pass
                else:
                    w += 0.6 * scale
                i += len(m[0]); continue
            i += 2; w += 0.3 * scale; continue
        if c == '\x01': w += 0.5 * scale
        elif c in '=<>+': w += 1.0 * scale
        elif c in '-': w += 1.0 * scale
        elif c in ',;': w += 0.45 * scale
        elif c in '()[]|': w += 0.4 * scale
        elif c == ' ': w += 0.0
        elif c.isdigit(): w += 0.5 * scale
        elif c.isalpha(): w += 0.55 * scale
        else: w += 0.5 * scale
        i += 1
    return w


def drawn_width(tex: str) -> float:
    """The estimated width, in em, of an inline formula (see the fit above)."""
    return round(SCALE * tex_width(tex) + OFFSET, 2)


def make_room(body: str) -> str:
    """Each inline formula of a page body with its estimated width (``style="--tex-w: ...em"``)."""
    def room(m):
        return (f'<span class="math notranslate nohighlight" style="--tex-w: {drawn_width(html.unescape(m[1]))}em">'
                f'\\({m[1]}\\)</span>')
    return _INLINE.sub(room, body)


def add_room(app, pagename, templatename, context, doctree):
    if context.get("body"):
        context["body"] = make_room(context["body"])


def setup(app):
    app.connect("html-page-context", add_room)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
