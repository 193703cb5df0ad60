"""Drawing nets: DOT text with sub-models as clusters, rendering through Graphviz."""

import re
import shutil

import pytest

from spn.exceptions import SpnError
from spn.description import parse_description
from spn.io.dot import render, to_dot
from spn.models.dag import build

FORK_JOIN = {
    "name": "fj", "workload": {"users": 1, "think_time": 1.0}, "cluster": {"containers": 2},
    "phases": [{"name": "a", "tasks": 2, "task_time": 1.0}, {"name": "b", "tasks": 1, "task_time": 1.0},
               {"name": "c", "tasks": 1, "task_time": 1.0}],
    "edges": [["a", "c"], ["b", "c"]],
}


def test_every_place_and_activity_is_drawn_once_and_sub_models_are_clusters():
    net = build(parse_description(FORK_JOIN)).net
    text = to_dot(net)
    nodes = re.findall(r'^\s*("[pa]:[^"]*") \[', text, flags=re.M)
    assert sorted(nodes) == sorted([f'"p:{p.name}"' for p in net.places] + [f'"a:{a.name}"' for a in net.activities])
    for sub in ("a", "b", "c", "think", "start", "join@c"):
        assert f'subgraph "cluster_{sub}"' in text
    # the container pool is shared: it stands outside every cluster, with its tokens
    assert '"p:PC" [shape=circle, width=0.3, fixedsize=true, label="2", xlabel="PC"];' in text
    # arc multiplicity and the inhibitor arc of the gate
    assert '"a:a.IAS" -> "p:a.PW" [label=2];' in text
    assert '"p:c.PW" -> "a:c.IAEJ" [arrowhead=odot];' in text


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_render_writes_a_complete_svg(tmp_path):
    out = render(to_dot(build(parse_description(FORK_JOIN)).net), tmp_path / "net.svg")
    assert out.read_text().lstrip().startswith("<?xml")
    assert not list(tmp_path.glob(".*partial"))


def test_render_refuses_unknown_formats(tmp_path):
    with pytest.raises(SpnError, match=r"\.svg, \.png or \.pdf"):
        render("digraph {}", tmp_path / "net.gif")


def test_spn_export_prints_dot_and_spn_draw_writes_the_file(tmp_path, capsys):
    from pathlib import Path

    from spn.cli import main
    model = str(Path(__file__).resolve().parents[1] / "models" / "tez-tq2.yaml")
    assert main(["export", model]) == 0
    out = capsys.readouterr().out
    assert out.startswith('digraph "tez-tq2" {') and 'subgraph "cluster_join@join"' in out
    assert main(["draw", model, "-o", str(tmp_path / "x.gif")]) == 2
    assert "spn: error:" in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()
    if shutil.which("dot"):
        assert main(["draw", model, "-o", str(tmp_path / "net.svg")]) == 0
        assert (tmp_path / "net.svg").read_text().lstrip().startswith("<?xml")
