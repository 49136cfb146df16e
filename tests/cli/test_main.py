"""The command line's entry point: each command's parser alone, every command listed."""
import sys

import pytest

from collsim import cli


def test_commands_name_the_module_that_registers_each():
    full = cli.build_parser(["--help"])
    sub = next(a for a in full._actions if a.dest == "command")
    assert set(sub.choices) == set(cli.COMMANDS)
    for name, module in cli.COMMANDS.items():
        alone = cli.build_parser(["--max-memory", "1G", name])
        choices = next(a for a in alone._actions if a.dest == "command").choices
        assert name in choices and len(choices) < len(sub.choices), name


def test_a_command_imports_its_module_alone(monkeypatch):
    monkeypatch.delitem(sys.modules, "collsim.cli.diagnose", raising=False)
    assert cli.main(["schedule", "--algo", "ring", "--ranks", "4", "--count", "8"]) == 0
    assert "collsim.cli.diagnose" not in sys.modules


@pytest.mark.parametrize("argv", [["no-such-command"], ["--max-memory", "1G", "smulate"]])
def test_an_unknown_command_is_refused_with_the_whole_list(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
