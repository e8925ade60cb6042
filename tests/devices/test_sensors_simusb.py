"""The simusb:// pyusb backend, driven by plain pyusb calls against the simulated board.

pyusb calls block, so each runs on a thread of its own that the test joins.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest
import usb.control
import usb.core
import usb.util

from drivers.sensors.frames import (
    LightsReport,
    SpotsReport,
    ValuesReport,
    encode_report,
    parse_in_report,
)
from drivers.sensors.simusb import (
    LIBUSB_ERROR_NO_DEVICE,
    LIBUSB_ERROR_TIMEOUT,
    DeviceMessage,
    PacketMessage,
    SimUsbBackend,
    encode_message,
    parse_url,
)
from simulators.sensors import SimulatedBoard

T = TypeVar("T")
WAIT_S = 10.0


async def blocking(fn: Callable[[], T]) -> T:
    """Run one blocking pyusb call on its own thread and join it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, exc: BaseException | None) -> None:
        if done.done():
            return
        if exc is not None:
            done.set_exception(exc)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            result = fn()
        except BaseException as exc:
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, result, None)

    thread = threading.Thread(target=work, name="test-pyusb-call")
    thread.start()
    try:
        async with asyncio.timeout(WAIT_S):
            return await done
    finally:
        thread.join()


def find(backend: SimUsbBackend, vid: int = 0x1209, pid: int = 0x0001) -> Any:
    return usb.core.find(idVendor=vid, idProduct=pid, backend=backend)


@contextlib.contextmanager
def closing(backend: SimUsbBackend) -> Any:
    try:
        yield backend
    finally:
        backend.close()


def read_report(dev: Any, timeout_ms: int = 2000) -> SpotsReport | ValuesReport:
    return parse_in_report(bytes(dev.read(0x81, 64, timeout_ms)))


def read_spots(dev: Any) -> SpotsReport:
    while True:
        report = read_report(dev)
        if isinstance(report, SpotsReport):
            return report


async def test_pyusb_finds_the_board_by_vid_pid_with_its_descriptors() -> None:
    async with SimulatedBoard(serial="SB-0042", product="Layout sensors") as board:
        with closing(SimUsbBackend.from_url(board.url)) as backend:
            dev = await blocking(lambda: find(backend))
            assert dev is not None
            assert (dev.idVendor, dev.idProduct) == (0x1209, 0x0001)
            assert dev.bNumConfigurations == 1
            assert await blocking(lambda: dev.serial_number) == "SB-0042"
            assert await blocking(lambda: dev.product) == "Layout sensors"
            assert await blocking(lambda: dev.manufacturer) is None
            config = dev[0]
            interface = config[(0, 0)]
            assert interface.bInterfaceNumber == 0
            assert interface.bInterfaceClass == 0xFF
            endpoints = {ep.bEndpointAddress: ep for ep in interface}
            assert set(endpoints) == {0x81, 0x01}
            for ep in endpoints.values():
                assert usb.util.endpoint_type(ep.bmAttributes) == usb.util.ENDPOINT_TYPE_INTR
                assert ep.wMaxPacketSize == 64
            assert usb.util.endpoint_direction(0x81) == usb.util.ENDPOINT_IN
            # The configuration descriptor read over ep0 agrees with the parsed one.
            raw = await blocking(lambda: usb.control.get_descriptor(dev, 64, 0x02, 0))
            assert len(raw) == config.wTotalLength == 32
            assert await blocking(lambda: find(backend, pid=0x0002)) is None
            await blocking(lambda: usb.util.dispose_resources(dev))


async def test_set_configuration_claim_read_and_write() -> None:
    async with SimulatedBoard() as board:
        board.set_spot(2, 1, 500)
        with closing(SimUsbBackend.from_url(board.url)) as backend:
            dev = await blocking(lambda: find(backend))

            def open_and_read() -> list[SpotsReport | ValuesReport]:
                dev.set_configuration()
                assert dev.get_active_configuration().bConfigurationValue == 1
                usb.util.claim_interface(dev, 0)
                return [read_report(dev), read_report(dev)]

            first = await blocking(open_and_read)
            assert first == [ValuesReport(1, ((4, 500),)), SpotsReport(1, 1 << 4, 0)]

            written = await blocking(lambda: dev.write(0x01, encode_report(LightsReport(0b100))))
            assert written == 5
            async with asyncio.timeout(WAIT_S):
                await board.wait_lights(0b100)
            await blocking(lambda: usb.util.dispose_resources(dev))


async def test_a_silent_board_makes_reads_time_out_like_libusb() -> None:
    async with stand_in_board([encode_message(DeviceMessage(0x1209, 0x0001, "RIG", "rig"))]) as url:
        with closing(SimUsbBackend.from_url(url)) as backend:
            dev = await blocking(lambda: find(backend))
            assert dev is not None
            with pytest.raises(usb.core.USBTimeoutError) as caught:
                await blocking(lambda: dev.read(0x81, 64, 30))
            assert caught.value.errno == errno.ETIMEDOUT
            assert caught.value.backend_error_code == LIBUSB_ERROR_TIMEOUT
            await blocking(lambda: usb.util.dispose_resources(dev))


async def test_unplug_raises_enodev_and_enumeration_finds_nothing_until_replug() -> None:
    async with SimulatedBoard() as board:
        with closing(SimUsbBackend.from_url(board.url)) as backend:
            dev = await blocking(lambda: find(backend))
            first_address = dev.address
            await blocking(lambda: read_spots(dev))
            await board.unplug()

            def read_until_gone() -> usb.core.USBError:
                while True:
                    try:
                        dev.read(0x81, 64, 2000)
                    except usb.core.USBTimeoutError:
                        raise
                    except usb.core.USBError as exc:
                        return exc

            gone = await blocking(read_until_gone)
            assert gone.errno == errno.ENODEV
            assert gone.backend_error_code == LIBUSB_ERROR_NO_DEVICE
            with pytest.raises(usb.core.USBError) as caught:
                await blocking(lambda: dev.write(0x01, encode_report(LightsReport(1))))
            assert caught.value.errno == errno.ENODEV
            assert await blocking(lambda: find(backend)) is None

            await board.replug()
            again = await blocking(lambda: find(backend))
            assert again is not None
            assert again.address != first_address
            assert (await blocking(lambda: read_spots(again))).seq == board.seq
            for device in (dev, again):
                await blocking(lambda d=device: usb.util.dispose_resources(d))  # type: ignore[misc]


async def test_garbage_on_the_wire_is_skipped_and_counted() -> None:
    async with SimulatedBoard() as board:
        with closing(SimUsbBackend.from_url(board.url)) as backend:
            dev = await blocking(lambda: find(backend))
            await blocking(lambda: read_spots(dev))
            board.mute()
            board.inject_line(b"not json at all\n")
            board.inject_line(b"x" * 10_000 + b"\n")
            board.inject_line(b'{"type": "in", "ep": 130, "data": "00"}\n')
            board.inject_line(b'{"type": "device", "vid": 1, "pid": 1}\n')
            board.inject_in(encode_report(SpotsReport(77, 0b111, 0b1)))
            report = await blocking(lambda: read_report(dev))
            assert report == SpotsReport(77, 0b111, 0b1)
            assert backend.stats.bad_lines == 1
            assert backend.stats.overlong_lines == 1
            assert backend.stats.unexpected_messages == 2
            await blocking(lambda: usb.util.dispose_resources(dev))


async def test_a_packet_longer_than_the_read_buffer_overflows() -> None:
    async with SimulatedBoard() as board:
        with closing(SimUsbBackend.from_url(board.url)) as backend:
            dev = await blocking(lambda: find(backend))
            await blocking(lambda: read_spots(dev))
            board.mute()
            board.inject_in(bytes(65))
            with pytest.raises(usb.core.USBError) as caught:
                await blocking(lambda: dev.read(0x81, 64, 2000))
            assert caught.value.errno == errno.EOVERFLOW
            await blocking(lambda: usb.util.dispose_resources(dev))


@pytest.mark.parametrize(
    "first_line",
    [
        b"garbage\n",
        encode_message(PacketMessage("in", 0x81, bytes.fromhex("0105430000000000000000"))),
    ],
    ids=["garbage", "report-before-device"],
)
async def test_a_server_that_does_not_introduce_a_board_is_no_device(first_line: bytes) -> None:
    async with stand_in_board([first_line]) as url:
        with closing(SimUsbBackend.from_url(url)) as backend:
            assert await blocking(lambda: find(backend)) is None
            assert backend.stats.failed_connects == 1
            assert backend.stats.connects == 0


async def test_a_closed_backend_enumerates_nothing() -> None:
    async with SimulatedBoard() as board:
        backend = SimUsbBackend.from_url(board.url)
        backend.close()
        assert await blocking(lambda: find(backend)) is None
        assert backend.stats.connects == 0


async def test_a_second_handle_cannot_claim_the_interface() -> None:
    async with SimulatedBoard() as board:
        with closing(SimUsbBackend.from_url(board.url)) as backend:
            one = await blocking(lambda: find(backend))
            two = await blocking(lambda: find(backend))
            await blocking(lambda: usb.util.claim_interface(one, 0))
            with pytest.raises(usb.core.USBError) as caught:
                await blocking(lambda: usb.util.claim_interface(two, 0))
            assert caught.value.errno == errno.EBUSY
            for device in (one, two):
                await blocking(lambda d=device: usb.util.dispose_resources(d))  # type: ignore[misc]


def test_simusb_urls() -> None:
    assert parse_url("simusb://127.0.0.1:7003") == ("127.0.0.1", 7003)
    assert parse_url("simusb://[::1]:7003") == ("::1", 7003)
    assert SimUsbBackend("::1", 7).url == "simusb://[::1]:7"
    for bad in ["usb://1209:0001", "simusb://host", "simusb://:7003", "simusb://h:99999", "x"]:
        with pytest.raises(ValueError, match=r"simusb|port"):
            parse_url(bad)


@contextlib.asynccontextmanager
async def stand_in_board(lines: list[bytes]) -> AsyncIterator[str]:
    """A stand-in board that sends ``lines`` on connect, then stays silent."""
    handlers: set[asyncio.Task[None]] = set()
    writers: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        writers.append(writer)
        writer.write(b"".join(lines))
        try:
            await reader.read()
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"simusb://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
        for writer in writers:
            writer.close()
        await asyncio.gather(*handlers, return_exceptions=True)
