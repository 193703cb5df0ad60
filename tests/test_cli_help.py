"""``spn COMMAND --help`` prints what it means: no ``%%`` and no ``%(...)s`` left over.

argparse %-formats ``help=`` strings (so they write ``95 %%``) but prints ``description=`` and
``epilog=`` as given, where ``%%`` would show doubled; a ``%(default)s`` in a description would
show raw. Every subcommand's help is checked, so a new one is covered without a change here.
"""

from __future__ import annotations

import argparse

import pytest

from spn.cli import _parser, main


def _commands() -> list[str]:
    parser = _parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(actions[0].choices)


def _help(capsys, *args) -> str:
    assert main([*args, "--help"]) == 0
    return capsys.readouterr().out


def test_every_command_is_listed():
    assert {"solve", "simulate", "compare", "fit", "plan", "sweep", "predict"} <= set(_commands())


@pytest.mark.parametrize("command", [None, *_commands()])
def test_help_prints_what_it_means(capsys, command):
    text = _help(capsys, *([command] if command else []))
    assert "%%" not in text and "%(" not in text, text


def test_solve_help_says_95_percent_once(capsys):
    text = " ".join(_help(capsys, "solve").split())
    assert "95 % confidence interval" in text
