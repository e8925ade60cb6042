"""The scenario file's field types: cards, console presses and answers, amounts.

Each is a pydantic type whose error says what the file should hold instead
(``docs/scenarios.md``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator

from drivers.console.frames import ConsoleAction
from drivers.lineframe.cards import Card
from drivers.sensors.frames import MAX_CENTS

COVER: Final = "COVER"
MAX_CARDS_PER_STEP: Final = 500

Cents = Annotated[int, Field(ge=0, le=MAX_CENTS)]
Position = Annotated[int, Field(ge=1, le=10)]
Seconds = Annotated[float, Field(gt=0, le=120)]


def _card_text(text: Any) -> str:
    """A card as the devices write it (``TD``), or ``COVER`` for the cover card."""
    if not isinstance(text, str):
        raise ValueError(f"a card is text such as 'TD' or {COVER!r}, not {text!r}")
    upper = text.strip().upper()
    if upper == COVER:
        return COVER
    return str(Card.parse(upper))


def _plain_card(text: Any) -> str:
    card = _card_text(text)
    if card == COVER:
        raise ValueError("the cover card cannot be here")
    return card


def card_list(value: Any) -> tuple[str, ...]:
    """Cards as a list, where any item may hold several separated by spaces (``"7H 7S"``)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError(f"a list of cards such as [9C, 7H, 7S], not {value!r}")
    cards: list[str] = []
    for i, item in enumerate(items, 1):
        if not isinstance(item, str):
            raise ValueError(f"card {i}: a card is text such as 'TD', not {item!r}")
        for word in item.split():
            try:
                cards.append(_card_text(word))
            except ValueError as exc:
                raise ValueError(f"card {i}: {exc}") from None
    if not cards:
        raise ValueError("no cards given")
    return tuple(cards)


def _cards_arg(value: Any) -> int | tuple[str, ...]:
    """How many cards (``draw: 3``) or exactly which ones (``draw: [7H, 7S]``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_CARDS_PER_STEP:
            raise ValueError(f"a number of cards from 1 to {MAX_CARDS_PER_STEP}, not {value}")
        return value
    if isinstance(value, str | list):
        return card_list(value)
    raise ValueError(f"a number of cards or a list of cards, not {value!r}")


PlainCard = Annotated[str, AfterValidator(_plain_card)]
CardsArg = Annotated[int | tuple[str, ...], PlainValidator(_cards_arg)]
ShoeList = Annotated[tuple[str, ...], PlainValidator(card_list)]


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def given(self) -> dict[str, Any]:
        """The fields the file gave (``null`` included), by name, in declaration order."""
        return {n: getattr(self, n) for n in type(self).model_fields if n in self.model_fields_set}


_ANSWER = re.compile(r"^(ACK|NAK [A-Z][A-Z0-9_]*)\Z")
# Printable ASCII but the framing's ',', '$' and '*' (docs/devices.md, line framing).
_PRESS_ARG = re.compile(r"^[\x21-\x23\x25-\x29\x2b\x2d-\x7e]+\Z")


def _press_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a press is 'ACTION' or 'ACTION ARG' (e.g. 'WAR 1'), not {text!r}")
    words = text.split(maxsplit=1)
    action = words[0].upper()
    try:
        kind = ConsoleAction(action)
    except ValueError:
        choices = ", ".join(a.value for a in ConsoleAction)
        raise ValueError(f"unknown console action {words[0]!r}: one of {choices}") from None
    if kind.takes_arg and len(words) < 2:
        raise ValueError(f"{action} takes an argument, e.g. '{action} 1'")
    if not kind.takes_arg and len(words) > 1:
        raise ValueError(f"{action} takes no argument")
    if len(words) > 1 and not _PRESS_ARG.match(words[1]):
        # docs/devices.md line framing: fields are comma-separated printable ASCII.
        raise ValueError(f"the argument {words[1]!r} cannot travel in a frame")
    return " ".join([action, *words[1:]])


def _answer_text(text: Any) -> str:
    norm = " ".join(str(text).split()).upper()
    if not _ANSWER.match(norm):
        raise ValueError(f"'ACK' or 'NAK <REASON>' (e.g. 'NAK NOT_NOW'), not {text!r}")
    return norm


PressText = Annotated[str, PlainValidator(_press_text)]
AnswerText = Annotated[str, PlainValidator(_answer_text)]
