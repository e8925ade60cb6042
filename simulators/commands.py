"""The stdin commands of ``sim shoe`` and ``sim console``: what each word does, and ``help``.

Each ``*_commands(sim)`` returns the coroutine that acts on one command line
(a ``ValueError`` for one it cannot act on) and the ``help`` text listing
every command with its arguments. The line's own faults (``hang``,
``resume``, ``unplug``, ``replug``) are the same for every serial device.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from drivers.console.frames import ConsoleAction
from drivers.lineframe.cards import Card
from drivers.shoe.frames import ShoeCondition
from simulators.console import ConsoleSimulator
from simulators.errors import ShoeEmptyError
from simulators.serve import SimulatedLineDevice
from simulators.shoe import ShoeSimulator, SimulatedRead

Act = Callable[[list[str]], Awaitable[str]]

LINE_HELP = """\
  hang | resume           the device stops talking, its line up / talks again
  unplug                  pull the cable: the device is gone until replug
  replug                  put the cable back
  help                    this list
  quit                    stop the simulator"""

_SHOE_STATES = {
    "door": ShoeCondition.DOOR_OPEN,
    "jam": ShoeCondition.JAM,
    "fault": ShoeCondition.FAULT,
    "ok": ShoeCondition.OK,
}

SHOE_HELP = f"""\
commands:
  draw [CARD]             pass the next card of the shoe (or CARD, as AS or TD) under the reader
  misread                 pass the next card, unrecognised (MISREAD)
  drop                    pass the next card; its frame is lost on the line (RESEND has it)
  door | jam | fault | ok report that state in the heartbeat
  power                   power cycle: the read counter starts again at 1
  shuffle                 load a freshly shuffled shoe
{LINE_HELP}"""


def _action_usage(action: ConsoleAction) -> str:
    return action.value if action.arg_name is None else f"{action.value} {action.arg_name}"


CONSOLE_HELP = (
    "commands:\n"
    "  press ACTION [ARG]      press a button; the actions, with their arguments:\n"
    + "\n".join(f"      {_action_usage(a)}" for a in ConsoleAction)
    + "\n  restart                 the console restarts: its press numbers start again at 1\n"
    + LINE_HELP
)


async def line_fault(sim: SimulatedLineDevice[Any], word: str) -> str | None:
    """Act on a fault of the line itself; None if ``word`` is none of them."""
    match word:
        case "hang":
            sim.hang()
            return "hung"
        case "resume":
            sim.resume()
            return "resumed"
        case "unplug":
            # Issue 18: the device stays gone until replug, as a cable left out.
            await sim.stop_serving()
            return "unplugged"
        case "replug":
            return f"replugged at {await sim.replug()}"
    return None


def _read_line(read: SimulatedRead) -> str:
    return f"read {read.n} {read.card or 'COVER'} {read.frame.TAG}"


def shoe_commands(sim: ShoeSimulator) -> tuple[Act, str]:
    async def act(words: list[str]) -> str:
        word = words[0].lower()
        match [word, *words[1:]]:
            case ["draw"]:
                return _read_line(_draw(sim))
            case ["draw", card]:
                return _read_line(sim.draw(Card.parse(card.upper())))
            case ["misread"]:
                return _read_line(_draw(sim, misread=True))
            case ["drop"]:
                return _read_line(_draw(sim, drop=True))
            case [state] if state in _SHOE_STATES:
                sim.set_state(_SHOE_STATES[state])
                return f"state {sim.state}"
            case ["power"]:
                sim.power_cycle()
                return "power cycled"
            case ["shuffle"]:
                sim.load()
                return f"new shoe of {sim.remaining} cards"
            case [_]:
                if (done := await line_fault(sim, word)) is not None:
                    return done
        raise ValueError(f"unknown command {' '.join(words)!r}; 'help' lists them")

    return act, SHOE_HELP


def _draw(
    sim: ShoeSimulator, *, misread: bool | None = None, drop: bool | None = None
) -> SimulatedRead:
    try:
        return sim.draw(misread=misread, drop=drop)
    except ShoeEmptyError as exc:
        raise ValueError(f"{exc}: 'shuffle' loads a new one") from exc


def console_commands(sim: ConsoleSimulator) -> tuple[Act, str]:
    actions = ", ".join(_action_usage(a) for a in ConsoleAction)

    def action_of(text: str, arg: str | None) -> ConsoleAction:
        try:
            action = ConsoleAction(text.upper())
        except ValueError:
            raise ValueError(f"no action {text!r}: the actions are {actions}") from None
        if action.takes_arg != (arg is not None):
            raise ValueError(f"usage: press {_action_usage(action)}")
        return action

    async def act(words: list[str]) -> str:
        word = words[0].lower()
        match [word, *words[1:]]:
            case ["press", action]:
                return f"pressed {sim.press(action_of(action, None))}"
            case ["press", action, arg]:
                return f"pressed {sim.press(action_of(action, arg), arg.upper())}"
            case ["restart"]:
                sim.restart()
                return "restarted"
            case [_]:
                if (done := await line_fault(sim, word)) is not None:
                    return done
        raise ValueError(f"unknown command {' '.join(words)!r}; 'help' lists them")

    return act, CONSOLE_HELP
