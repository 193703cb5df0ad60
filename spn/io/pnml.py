"""Nets in the interchange formats of other tools: PNML and GreatSPN's ``.pnpro``.

Both carry what arcs can say: places with initial tokens, exponential timed
transitions (rate, servers), immediate transitions (priority, weight), input,
output and inhibitor arcs with multiplicities. Gates and marking-dependent rates
are code and cannot be written; Erlang activities are written expanded.

PNML follows the dialect that Storm and GreatSPN read and write: ``rate``,
``timed`` and ``priority`` children of a transition, ``Default,N`` values,
``type value="inhibition"`` arcs. PNML has no element for server semantics; spn
writes it in a ``toolspecific`` element that other tools ignore, and reads a
transition without it as single-server, as Storm does. ``.pnpro`` has servers
(``nservers="Infinite"``), so it is the file to hand Storm when a net has
infinite-server transitions.

>>> from spn.net import Net, Place, TimedActivity
>>> net = Net([Place("a", 2), Place("b")],
...           [TimedActivity("t", inputs={"a": 1}, outputs={"b": 1}, rate=1.5, servers="infinite")])
>>> back = from_pnml(to_pnml(net))
>>> back.activity("t").servers, back.places[0]
('infinite', Place(name='a', tokens=2))
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

from spn.exceptions import ModelError
from spn.limits import MAX_COUNT, MAX_XML_ELEMENTS, NET_BYTES, read_input
from spn.net.erlang import expand_erlang
from spn.net import InstantActivity, Net, Place, TimedActivity

TOOL = "spn"


# --------------------------------------------------------------------------- writing
def _check_writable(net: Net) -> Net:
    net = expand_erlang(net)
    problems = []
    for a in net.activities:
        if a.input_gates or a.output_gates:
            problems.append(f"activity {a.name!r} has gates, which are code: only arcs can be exported")
        if isinstance(a, TimedActivity) and callable(a.rate):
            problems.append(f"activity {a.name!r} has a marking-dependent rate: only constants can be exported")
        if isinstance(a, InstantActivity) and callable(a.weight):
            problems.append(f"activity {a.name!r} has a marking-dependent weight: only constants can be exported")
    if problems:
        raise ModelError(problems)
    return net


def _priority_ranks(net: Net) -> dict[float, int]:
    """Immediate priorities as the integers 1..k that GSPN tools expect (order kept)."""
    levels = sorted({a.priority for a in net.instant})
    return {p: i + 1 for i, p in enumerate(levels)}


def _servers_text(a: TimedActivity) -> str:
    return "infinite" if a.servers == "infinite" else str(int(a.servers))


def _num(x: float) -> str:
    return repr(float(x))


def to_pnml(net: Net) -> str:
    """The net as PNML text (see the module docstring for the dialect)."""
    net = _check_writable(net)
    ranks = _priority_ranks(net)
    root = ET.Element("pnml")
    page = ET.SubElement(root, "net", id=net.name)
    for p in net.places:
        place = ET.SubElement(page, "place", id=p.name)
        ET.SubElement(ET.SubElement(place, "initialMarking"), "value").text = f"Default,{p.tokens}"
    for a in net.activities:
        t = ET.SubElement(page, "transition", id=a.name)
        timed = isinstance(a, TimedActivity)
        ET.SubElement(ET.SubElement(t, "rate"), "value").text = _num(a.rate if timed else a.weight)
        ET.SubElement(ET.SubElement(t, "timed"), "value").text = "true" if timed else "false"
        ET.SubElement(ET.SubElement(t, "priority"), "value").text = "0" if timed else str(ranks[a.priority])
        if timed:
            tool = ET.SubElement(t, "toolspecific", tool=TOOL, version="1")
            ET.SubElement(tool, "servers").text = _servers_text(a)
    n = 0
    for a in net.activities:
        for kind, arcs, outgoing in (("normal", a.inputs, False), ("inhibition", a.inhibitors, False),
                                     ("normal", a.outputs, True)):
            for place, mult in arcs.items():
                source, target = (a.name, place) if outgoing else (place, a.name)
                arc = ET.SubElement(page, "arc", id=f"arc{n}", source=source, target=target)
                n += 1
                ET.SubElement(ET.SubElement(arc, "inscription"), "value").text = f"Default,{mult}"
                ET.SubElement(arc, "type", value=kind)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def identifier_names(net: Net) -> Net:
    """The same net with every place and activity renamed to a plain identifier
    (``map.PW`` -> ``map_PW``, ``a->b`` -> ``a_b``), as expression languages such as
    Storm's need; names made equal by the renaming get a numeric suffix."""
    import re

    taken: set[str] = set()

    def clean(name):
        base = re.sub(r"\W+", "_", name).strip("_") or "x"
        if base[0].isdigit():
            base = "n" + base
        new, i = base, 1
        while new in taken:
            i += 1
            new = f"{base}_{i}"
        taken.add(new)
        return new

    places = {p.name: clean(p.name) for p in net.places}
    acts = {a.name: clean(a.name) for a in net.activities}

    def arcs(d):
        return {places[p]: k for p, k in d.items()}

    import dataclasses
    return Net([Place(places[p.name], p.tokens) for p in net.places],
               [dataclasses.replace(a, name=acts[a.name], inputs=arcs(a.inputs), outputs=arcs(a.outputs),
                                    inhibitors=arcs(a.inhibitors)) for a in net.activities],
               name=clean(net.name))


def to_pnpro(net: Net) -> str:
    """The net as a GreatSPN editor project (``.pnpro``), which Storm also reads."""
    net = _check_writable(net)
    ranks = _priority_ranks(net)
    root = ET.Element("project", name=net.name, version="121")
    gspn = ET.SubElement(root, "gspn", name=net.name)
    nodes, edges = ET.SubElement(gspn, "nodes"), ET.SubElement(gspn, "edges")
    for i, p in enumerate(net.places):
        ET.SubElement(nodes, "place", marking=str(p.tokens), name=p.name, x=str(2 + 4 * i), y="2")
    for i, a in enumerate(net.activities):
        if isinstance(a, TimedActivity):
            servers = "Infinite" if a.servers == "infinite" else ("Single" if a.servers == 1 else str(a.servers))
            ET.SubElement(nodes, "transition", name=a.name, type="EXP", nservers=servers,
                          delay=_num(a.rate), x=str(2 + 4 * i), y="6")
        else:
            ET.SubElement(nodes, "transition", name=a.name, type="IMM", priority=str(ranks[a.priority]),
                          weight=_num(a.weight), x=str(2 + 4 * i), y="6")
    for a in net.activities:
        for place, mult in a.inputs.items():
            ET.SubElement(edges, "arc", head=a.name, tail=place, kind="INPUT", mult=str(mult))
        for place, mult in a.inhibitors.items():
            ET.SubElement(edges, "arc", head=a.name, tail=place, kind="INHIBITOR", mult=str(mult))
        for place, mult in a.outputs.items():
            ET.SubElement(edges, "arc", head=place, tail=a.name, kind="OUTPUT", mult=str(mult))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


# --------------------------------------------------------------------------- reading
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]          # PNML files may use an XML namespace


def _child(element, name):
    for c in element:
        if _local(c.tag) == name:
            return c
    return None


def _value(element, name, where, default=None):
    """Text of <name><value>..</value></name> (or <name><text>..</text></name>), 'Default,' stripped."""
    c = _child(element, name)
    if c is None:
        if default is None:
            raise ModelError(f"{where}: no <{name}>")
        return default
    v = _child(c, "value")
    if v is None:
        v = _child(c, "text")
    text = ((v.text if v is not None else c.text) or "").strip()
    return text.split(",", 1)[1] if text.startswith("Default,") else text


def _number(text, where, kind=float):
    shown = text if text is None or len(text) <= 40 else text[:37] + "..."
    try:
        x = kind(text) if text is None or len(text) <= 100 else kind("too long")
    except (TypeError, ValueError):
        expected = " (expected an integer)" if kind is int else ""
        raise ModelError(f"{where}: {shown!r} is not a number{expected}") from None
    if kind is float and not math.isfinite(x):
        raise ModelError(f"{where}: {shown!r} is not a finite number")
    if kind is int and abs(x) > MAX_COUNT:
        raise ModelError(f"{where}: {x:,} is more than {MAX_COUNT:,}")
    return x


class _BoundedTree:
    """ElementTree's builder, refusing more than MAX_XML_ELEMENTS elements or NET_BYTES of text
    (entity references can expand a small file into much more text than it holds)."""

    def __init__(self, source):
        self.source = source
        self.builder = ET.TreeBuilder()
        self.elements = self.characters = 0

    def start(self, tag, attrib):
        self.elements += 1
        if self.elements > MAX_XML_ELEMENTS:
            raise ModelError(f"{self.source}: more than {MAX_XML_ELEMENTS:,} XML elements, more than "
                             f"a PNML net can have")
        return self.builder.start(tag, attrib)

    def end(self, tag):
        return self.builder.end(tag)

    def data(self, text):
        self.characters += len(text)
        if self.characters > NET_BYTES:
            raise ModelError(f"{self.source}: more than {NET_BYTES:,} characters of XML text, more than "
                             f"a PNML net can have")
        return self.builder.data(text)

    def close(self):
        return self.builder.close()


def _parse_xml(text, source):
    parser = ET.XMLParser(target=_BoundedTree(source))
    try:
        parser.feed(text)
        return parser.close()
    except ET.ParseError as err:
        raise ModelError(f"{source}: not well-formed XML ({err})") from None


def from_pnml(text: str | bytes, *, source: str = "PNML") -> Net:
    """A net from PNML text (Storm's, GreatSPN's or spn's dialect).

    >>> from_pnml("<pnml><net id='n'/></pnml>", source="n.pnml")
    Traceback (most recent call last):
    ...
    spn.exceptions.ModelError: n.pnml: a net needs at least one place
    """
    root = _parse_xml(text, source)
    net_el = next((e for e in root.iter() if _local(e.tag) == "net"), None)
    if _local(root.tag) != "pnml" or net_el is None:
        raise ModelError(f"{source}: not a PNML file (no <pnml><net>)")
    elements = [e for e in net_el.iter() if _local(e.tag) in ("place", "transition", "arc")]
    places, problems = [], []
    for e in elements:
        if _local(e.tag) == "place":
            pid = e.get("id")
            tokens = _number(_value(e, "initialMarking", f"{source}: place {pid!r}", "0"),
                             f"{source}: place {pid!r} initial marking", int)
            places.append(Place(pid, tokens))
    spec = {}
    for e in elements:
        if _local(e.tag) == "transition":
            tid = e.get("id")
            if tid in spec:
                problems.append(f"{source}: transition {tid!r} is declared twice")
            where = f"{source}: transition {tid!r}"
            timed = _value(e, "timed", where, "false").lower() == "true"
            value = _number(_value(e, "rate", where, "1"), f"{where} rate/weight")
            priority = _number(_value(e, "priority", where, "0"), f"{where} priority")
            servers = 1
            tool = next((c for c in e if _local(c.tag) == "toolspecific" and c.get("tool") == TOOL), None)
            if tool is not None and _child(tool, "servers") is not None:
                s = (_child(tool, "servers").text or "").strip()
                servers = "infinite" if s == "infinite" else _number(s, f"{where} servers", int)
            spec[tid] = dict(timed=timed, value=value, priority=priority, servers=servers,
                             inputs={}, outputs={}, inhibitors={})
    place_ids = {p.name for p in places}
    for e in elements:
        if _local(e.tag) != "arc":
            continue
        src, dst, aid = e.get("source"), e.get("target"), e.get("id")
        where = f"{source}: arc {aid!r}"
        mult = _number(_value(e, "inscription", where, "1"), f"{where} inscription", int)
        type_el = _child(e, "type")
        kind = (type_el.get("value") or (type_el.text or "")).strip() if type_el is not None else "normal"
        if src in place_ids and dst in spec:
            key = {"normal": "inputs", "inhibition": "inhibitors", "inhibitor": "inhibitors"}.get(kind)
            if key is None:
                problems.append(f"{where}: unknown arc type {kind!r}")
                continue
            spec[dst][key][src] = spec[dst][key].get(src, 0) + mult
        elif src in spec and dst in place_ids and kind == "normal":
            spec[src]["outputs"][dst] = spec[src]["outputs"].get(dst, 0) + mult
        else:
            problems.append(f"{where}: must join a place and a transition ({src!r} -> {dst!r}, type {kind})")
    if problems:
        raise ModelError(_capped(problems))
    activities = []
    for tid, s in spec.items():
        arcs = dict(inputs=s["inputs"], outputs=s["outputs"], inhibitors=s["inhibitors"])
        if s["timed"]:
            activities.append(TimedActivity(tid, rate=s["value"], servers=s["servers"], **arcs))
        else:
            activities.append(InstantActivity(tid, priority=s["priority"], weight=s["value"], **arcs))
    name = net_el.get("id") or Path(source).stem
    try:
        return Net(places, activities, name=name)
    except ModelError as err:
        raise ModelError(_capped([f"{source}: {p}" for p in err.problems])) from None


def _capped(problems, most: int = 50):
    """At most ``most`` problems, and how many more (a hostile file may have a million)."""
    if len(problems) <= most:
        return problems
    return problems[:most] + [f"and {len(problems) - most:,} more problems"]


def load_pnml(path) -> Net:
    """Read a ``.pnml`` file (a regular file of at most :data:`~spn.limits.NET_BYTES`)."""
    data = read_input(path, max_bytes=NET_BYTES, what="PNML net")
    return from_pnml(data, source=str(path))
