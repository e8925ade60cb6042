"""The PUBLISH properties, packed once: the bytes paho would write, after any change too."""

from __future__ import annotations

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from table_controller.service.mqtt_client import CONTENT_TYPE, PackedProperties, properties


def _plain(**values: object) -> bytes:
    """What paho's own Properties pack these values to."""
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    for name, value in values.items():
        setattr(props, name, value)
    return bytes(props.pack())  # type: ignore[no-untyped-call]


def test_publish_properties_pack_as_paho_packs_them() -> None:
    props = properties(PacketTypes.PUBLISH, v5=True)
    assert isinstance(props, PackedProperties)
    expected = _plain(ContentType=CONTENT_TYPE, PayloadFormatIndicator=1)
    assert props.pack() == expected
    assert props.pack() == expected  # the second time from what the first packed


def test_a_change_is_packed_again() -> None:
    props = properties(PacketTypes.PUBLISH, v5=True)
    assert props is not None
    props.pack()
    props.MessageExpiryInterval = 30
    expected = _plain(ContentType=CONTENT_TYPE, PayloadFormatIndicator=1, MessageExpiryInterval=30)
    assert props.pack() == expected


def test_no_properties_under_3_1_1() -> None:
    assert properties(PacketTypes.PUBLISH, v5=False) is None
