"""Parse one SASS operand as nvdisasm prints it (sm_35, sm_52, sm_90 syntax)."""

from __future__ import annotations

import re

from gpusim.isa.program import PT, RZ, URZ, Operand

_REG = re.compile(r"^(U?R)(\d+|Z)$")
_PRED = re.compile(r"^(U?P)(\d+|T)$")
_INT = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")
_FLOAT = re.compile(r"^[-+]?(\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+|INF|QNAN|NAN|\d+\.#INF)$")
_LABEL = re.compile(r"^`\((.*)\)$")


class OperandSyntaxError(ValueError):
    pass


def split_operands(text: str) -> list[str]:
    """Split on commas that are not inside brackets or parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if (ch == "," or (ch == "`" and "".join(cur).strip())) and depth == 0:
            # a comma, or the backquote of a label after a register (RET.REL.NODEC R6 `(kernel))
            parts.append("".join(cur).strip())
            cur = [] if ch == "," else [ch]
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return parts


def _reg_number(name: str, num: str) -> int:
    if num == "Z":
        return URZ if name == "UR" else RZ
    return int(num)


def _strip_suffixes(text: str) -> tuple[str, tuple[str, ...], bool]:
    """'R19.reuse' -> ('R19', (), True); 'R4.H1' -> ('R4', ('H1',), False)."""
    head, *rest = text.split(".")
    reuse = "reuse" in rest
    return head, tuple(s for s in rest if s != "reuse"), reuse


def _parse_address(body: str, text: str) -> dict:
    """Inside of [...]: terms joined by '+', each a register, uniform register or immediate."""
    fields: dict = {"reg": None, "ureg": None, "value": 0, "suffix": ()}
    for term in [t.strip() for t in body.split("+") if t.strip()]:
        head, suffix, _ = _strip_suffixes(term)
        m = _REG.match(head)
        if m and m.group(1) == "R":
            fields["reg"] = _reg_number("R", m.group(2))
            fields["suffix"] = suffix
        elif m and m.group(1) == "UR":
            fields["ureg"] = _reg_number("UR", m.group(2))
        elif _INT.match(term):
            fields["value"] += int(term, 0) if not term.startswith("-") else -int(term[1:], 0)
        else:
            raise OperandSyntaxError(f"cannot read address term '{term}' in '{text}'")
    return fields


def parse_operand(text: str, labels: dict[str, int] | None = None) -> Operand:
    raw = text
    negate = absolute = invert = False
    t = text.strip()
    if t.startswith("-") and not _INT.match(t) and not _FLOAT.match(t):
        negate, t = True, t[1:]
    if t.startswith("!"):
        invert, t = True, t[1:]
    if t.startswith("~"):
        invert, t = True, t[1:]
    if t.startswith("|") and "|" in t[1:]:
        end = t.rindex("|")
        absolute, t = True, t[1:end] + t[end + 1:]

    m = _LABEL.match(t)
    if m:
        name = m.group(1)
        if labels is None or name not in labels:
            raise OperandSyntaxError(f"unknown branch label '{name}'")
        return Operand("label", raw, value=labels[name])

    if t.startswith("c["):
        cm = re.match(r"^c\[(0x[0-9a-f]+)\]\s*\[([^\]]*)\](.*)$", t)
        if not cm:
            raise OperandSyntaxError(f"cannot read constant operand '{raw}'")
        addr = _parse_address(cm.group(2), raw)
        suffix = tuple(s for s in cm.group(3).split(".") if s)
        return Operand("const", raw, bank=int(cm.group(1), 16), value=addr["value"], reg=addr["reg"],
                       ureg=addr["ureg"], negate=negate, absolute=absolute, suffix=suffix)

    if t.startswith("desc[") or t.startswith("["):
        desc = None
        if t.startswith("desc["):
            dm = re.match(r"^desc\[(UR\d+|URZ)\](.*)$", t)
            if not dm:
                raise OperandSyntaxError(f"cannot read memory descriptor in '{raw}'")
            desc = _reg_number("UR", dm.group(1)[2:])
            t = dm.group(2)
        mm = re.match(r"^\[(.*)\](.*)$", t)
        if not mm:
            raise OperandSyntaxError(f"cannot read memory operand '{raw}'")
        addr = _parse_address(mm.group(1), raw)
        width = 64 if "64" in addr["suffix"] else 32
        return Operand("mem", raw, reg=addr["reg"], ureg=addr["ureg"], value=addr["value"], desc=desc,
                       width=width, suffix=addr["suffix"])

    if t.startswith("SR_") or t in ("SRZ",):
        return Operand("sreg", raw, value=None, suffix=(t,))

    head, suffix, reuse = _strip_suffixes(t)
    m = _REG.match(head)
    if m:
        kind = "reg" if m.group(1) == "R" else "ureg"
        return Operand(kind, raw, reg=_reg_number(m.group(1), m.group(2)), negate=negate, absolute=absolute,
                       invert=invert, reuse=reuse, suffix=suffix)
    m = _PRED.match(head)
    if m and not suffix:
        num = PT if m.group(2) == "T" else int(m.group(2))
        return Operand("pred" if m.group(1) == "P" else "upred", raw, reg=num, invert=invert, width=1)
    if re.match(r"^SB\d$", head):  # scoreboard (DEPBAR.LE SB5, 0x1)
        return Operand("sb", raw, reg=int(head[2:]))
    if re.match(r"^B\d+$", head):  # convergence barrier register (BSSY B0, target)
        return Operand("breg", raw, reg=int(head[1:]))
    if head == "PR" or head == "UPR":
        return Operand("other", raw, suffix=(head,))
    if _INT.match(t):
        val = int(t, 0) if not t.startswith("-") else -int(t[1:], 0)
        return Operand("imm", raw, value=val, negate=negate)
    if _FLOAT.match(t):
        s = t.replace("QNAN", "nan").replace("NAN", "nan").replace("1.#INF", "inf")
        return Operand("fimm", raw, value=float(s.replace("INF", "inf")), negate=negate)
    raise OperandSyntaxError(f"cannot read operand '{raw}'")
