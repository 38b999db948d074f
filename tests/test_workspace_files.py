"""The workspace's files on a real temporary folder: confinement (traversal, absolute paths,
symlinks out, FIFOs, huge files), reads and ETags, atomic conditional saves, the opaque host
resources and their leases, and changes on disk reaching a subscriber."""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from actors.files import confine
from actors.files.actor import WorkspaceActor
from actors.files.confine import (
    FileRefused,
    FileTooLarge,
    NoSuchFile,
    NotAFile,
    OutsideWorkspace,
    parts,
)
from actors.files.messages import (
    EndLease,
    ListFolder,
    Opened,
    OpenFile,
    ReadResource,
    ResourceUpdated,
    Subscribe,
    WatchWorkspace,
    WorkspaceChanged,
    WriteResource,
)
from actors.files.requests import (
    BadFileRequest,
    Write,
    host_capabilities,
    is_host_resource,
    open_path,
    representation,
    with_resource_path,
    write_params,
)
from actors.files.resources import ResourceTable, UnknownResource
from actors.files.viewers import file_extensions, file_viewers
from actors.files.workspace import ChangedSince, Saved, TooLarge, Workspace, WriteRefused, etag
from actors.metrics import Metrics
from actors.runtime import Mailbox, Reply, ask
from supervisor.model.workspace import WorkspaceConfig

CSV = "sku,product,on_hand\nAPL-001,Apples,40\nBAN-002,Bananas,12\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "inventory").mkdir(parents=True)
    (root / "inventory" / "stock.csv").write_text(CSV)
    (root / "notes.txt").write_text("hello\n")
    return root


def workspace(root: Path, **limits: object) -> Workspace:
    return Workspace(WorkspaceConfig(root=root, **limits))  # type: ignore[arg-type]


# Confinement, pure.


def test_parts_refuse_climbing_and_absolute_paths_elsewhere() -> None:
    root = Path("/srv/ws")
    assert parts(root, "inventory/./stock.csv") == ("inventory", "stock.csv")
    assert parts(root, "/srv/ws/inventory/stock.csv") == ("inventory", "stock.csv")
    assert parts(root, "") == ()
    for bad in ("../etc/passwd", "inventory/../../x", "a/.."):
        with pytest.raises(OutsideWorkspace, match="climbs out"):
            parts(root, bad)
    for bad in ("/etc/passwd", "/srv/wsx/a", "/srv"):
        with pytest.raises(OutsideWorkspace, match="outside the workspace"):
            parts(root, bad)
    with pytest.raises(FileRefused, match="NUL"):
        parts(root, "a\x00b")


# Confinement on disk.


def test_symlinks_out_are_refused_and_symlinks_in_are_followed(root: Path, tmp_path: Path) -> None:
    (root / "passwd").symlink_to("/etc/passwd")
    (root / "etc").symlink_to("/etc")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "inventory" / "up").symlink_to(tmp_path)
    (root / "stock-link.csv").symlink_to(root / "inventory" / "stock.csv")
    ws = workspace(root)
    for given in ("passwd", "etc/hostname", "inventory/up/secret.txt", str(root / "passwd")):
        with pytest.raises(OutsideWorkspace, match="symlink"):
            ws.locate(given)
    located = ws.locate("stock-link.csv")
    assert located.path == (root / "inventory" / "stock.csv").resolve()
    assert located.name == "stock.csv"
    with pytest.raises(OutsideWorkspace):
        ws.locate("../secret.txt")
    with pytest.raises(OutsideWorkspace):
        ws.locate(str(tmp_path / "secret.txt"))


def test_a_folder_swapped_for_a_symlink_after_resolving_is_not_followed(
    root: Path, tmp_path: Path
) -> None:
    # What `resolve` checked is opened again from the root without following a symlink: a
    # path that has one by then (a folder swapped between the two) is refused.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "stock.csv").write_text("not yours")
    (root / "swapped").symlink_to(tmp_path / "elsewhere")
    with (
        pytest.raises(FileRefused, match="changed while it was opened"),
        confine.open_file(root.resolve(), root.resolve() / "swapped" / "stock.csv"),
    ):
        pass


def test_absolute_paths_through_a_symlinked_root(root: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(root)
    ws = workspace(tmp_path / "link")  # the config names the root through a symlink
    for given in (tmp_path / "link" / "notes.txt", root / "notes.txt"):
        assert ws.locate(str(given)).relative == "notes.txt"
    with pytest.raises(OutsideWorkspace):
        ws.locate(str(tmp_path / "link" / ".." / "outside"))


def test_a_fifo_is_refused_without_being_opened(root: Path) -> None:
    os.mkfifo(root / "pipe.csv")
    ws = workspace(root)
    # Opening a FIFO for reading blocks until a writer comes: were it opened, this would hang.
    with pytest.raises(NotAFile, match="FIFO"):
        ws.locate("pipe.csv")
    with pytest.raises(NotAFile, match="FIFO"):
        ws.read(root / "pipe.csv")
    with pytest.raises(NotAFile, match="folder"):
        ws.locate("inventory")


def test_a_device_is_refused() -> None:
    ws = workspace(Path("/dev"))  # a workspace whose files are devices
    with pytest.raises(NotAFile, match="device"):
        ws.locate("null")


def test_a_huge_file_is_refused_before_it_is_read(root: Path) -> None:
    huge = root / "huge.bin"
    with huge.open("wb") as f:
        f.truncate(10 * 1024**3)  # 10 GiB, sparse: read whole, this test would take minutes
    ws = workspace(root, max_read_bytes=1024)
    with pytest.raises(FileTooLarge, match="max_read_bytes") as refused:
        ws.read(huge)
    assert refused.value.size == 10 * 1024**3
    (root / "small.txt").write_bytes(b"x" * 1024)
    assert ws.read(root / "small.txt").data == b"x" * 1024


# Reads, ETags and saves.


def test_the_etag_follows_the_content_not_the_clock(root: Path) -> None:
    ws = workspace(root)
    path = root / "inventory" / "stock.csv"
    first = ws.read(path)
    assert first.data == CSV.encode()
    assert first.writable
    stat = path.stat()
    path.write_text(CSV.replace("40", "41"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime, new content
    assert ws.read(path).etag != first.etag
    path.write_text(CSV)
    assert ws.read(path).etag == first.etag == etag(CSV.encode())


def test_conditional_saves(root: Path) -> None:
    ws = workspace(root, max_write_bytes=100)
    path = root / "inventory" / "stock.csv"
    path.chmod(0o640)
    read = ws.read(path)
    saved = ws.write(path, b"first", read.etag)
    assert saved == Saved(etag(b"first"))
    # A second writer still holding the first version's ETag: refused, the first save kept.
    assert ws.write(path, b"second", read.etag) == ChangedSince(etag(b"first"))
    assert path.read_bytes() == b"first"
    assert (path.stat().st_mode & 0o777) == 0o640  # the file keeps its permissions
    assert ws.write(path, b"x" * 101, None) == TooLarge(100)
    assert ws.write(path, b"last writer wins", None) == Saved(etag(b"last writer wins"))
    assert sorted(p.name for p in path.parent.iterdir()) == ["stock.csv"]  # no temporary left


def test_a_read_only_workspace_refuses_saves(root: Path) -> None:
    ws = workspace(root, writable=False)
    path = root / "notes.txt"
    assert ws.read(path).writable is False
    with pytest.raises(WriteRefused, match="read-only"):
        ws.write(path, b"no", None)
    assert path.read_text() == "hello\n"


def test_listing_puts_folders_first_and_skips_hidden_and_special_files(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".env").write_text("X=1")
    (root / "b-folder").mkdir()
    (root / "A.csv").write_text("a")
    (root / "out").symlink_to("/etc")
    os.mkfifo(root / "pipe")
    listing = workspace(root).list_folder("")
    assert [(e.name, e.kind) for e in listing.entries] == [
        ("b-folder", "folder"),
        ("inventory", "folder"),
        ("A.csv", "file"),
        ("notes.txt", "file"),
    ]
    inner = workspace(root).list_folder("inventory")
    assert [(e.path, e.size) for e in inner.entries] == [("inventory/stock.csv", len(CSV))]
    with pytest.raises(OutsideWorkspace):
        workspace(root).list_folder("..")
    with pytest.raises(NoSuchFile):
        workspace(root).list_folder("nope")


# The host resources, pure.


def test_uris_are_opaque_per_lease_and_end_with_it() -> None:
    table = ResourceTable()
    path = Path("/srv/ws/inventory/stock.csv")
    a = table.mint("lease-a", path, "inventory/stock.csv", "stock.csv")
    assert table.mint("lease-a", path, "inventory/stock.csv", "stock.csv") is a
    b = table.mint("lease-b", path, "inventory/stock.csv", "stock.csv")
    assert a.uri != b.uri
    for uri in (a.uri, b.uri):
        assert uri.startswith("host-resource://")
        assert "stock" not in uri
        assert "inventory" not in uri
        assert "srv" not in uri
        assert len(uri.removeprefix("host-resource://")) == 32
    assert table.resolve("lease-a", a.uri) is a
    with pytest.raises(UnknownResource):
        table.resolve("lease-b", a.uri)  # another view's URI reads as one never minted
    table.end_lease("lease-a")
    with pytest.raises(UnknownResource):
        table.resolve("lease-a", a.uri)
    assert table.resolve("lease-b", b.uri) is b


# The file viewers, pure.


def test_file_viewers_are_ui_tools_with_file_entry_points() -> None:
    def tool(name: str, *entrypoints: object, ui: bool = True) -> dict[str, object]:
        meta: dict[str, object] = {"openai/ui": {"entrypoints": list(entrypoints)}}
        if ui:
            meta["ui"] = {"resourceUri": f"ui://a/{name}.html"}
        return {"name": name, "_meta": meta}

    sheet = tool("sheet", {"type": "file", "extensions": [".CSV", ".tsv", ".csv"]})
    sheet["title"] = "Sheet"
    tools = [
        sheet,
        tool("archive", {"type": "global"}, {"type": "file", "extensions": [".tar.gz"]}),
        tool("no_ui", {"type": "file", "extensions": [".csv"]}, ui=False),
        tool("odd", {"type": "file", "extensions": ["csv", "text/csv", ".", 7]}, "junk"),
        {"name": "plain"},
    ]
    assert file_extensions(sheet) == (".csv", ".tsv")
    viewers = file_viewers(("a", "a." + str(t["name"]), t) for t in tools)
    assert [(v.tool, v.title) for v in viewers] == [("a.sheet", "Sheet"), ("a.archive", "archive")]
    sheet_viewer, archive = viewers
    assert sheet_viewer.accepts("Stock.CSV")
    assert sheet_viewer.accepts("x.tsv")
    assert not sheet_viewer.accepts(".csv")  # a hidden file named like the extension
    assert not sheet_viewer.accepts("stock.csv.bak")
    assert archive.accepts("backup.TAR.GZ")
    assert not archive.accepts("backup.gz")


# The workspace actor.


@pytest.fixture
async def actor(root: Path) -> AsyncIterator[WorkspaceActor]:
    files = WorkspaceActor(WorkspaceConfig(root=root, max_write_bytes=1000), Metrics())
    async with trio.open_nursery() as nursery:
        await nursery.start(files.run)
        yield files
        nursery.cancel_scope.cancel()


async def open_file(files: WorkspaceActor, lease: str, path: str) -> Opened:
    return await ask(files.mailbox, lambda r: OpenFile(lease, path, r), 10)


async def read(files: WorkspaceActor, lease: str, uri: str, how: str | None = None) -> dict:
    result = await ask(files.mailbox, lambda r: ReadResource(lease, uri, how, r), 10)  # type: ignore[arg-type]
    return result["contents"][0]


async def write(
    files: WorkspaceActor, lease: str, uri: str, text: str, if_match: str | None = None
) -> dict:
    return await ask(
        files.mailbox, lambda r: WriteResource(lease, uri, text, None, if_match, r), 10
    )


async def test_two_views_and_a_stale_etag(actor: WorkspaceActor, root: Path) -> None:
    one = await open_file(actor, "view-1", "inventory/stock.csv")
    two = await open_file(actor, "view-2", "inventory/stock.csv")
    assert one.file_input() == {"file": {"name": "stock.csv", "resourceUri": one.uri}}
    assert one.uri != two.uri
    assert one.path == str((root / "inventory/stock.csv").resolve())
    first = await read(actor, "view-1", one.uri)
    second = await read(actor, "view-2", two.uri)
    assert first["text"] == CSV
    assert first["mimeType"] == "text/csv"
    meta = first["_meta"]["openai/resource"]
    assert meta["writable"] is True
    assert meta == second["_meta"]["openai/resource"]
    saved = await write(actor, "view-1", one.uri, CSV + "CHR-003,Cherries,5\n", meta["etag"])
    assert saved["outcome"] == "saved"
    assert saved["etag"] != meta["etag"]
    stale = await write(actor, "view-2", two.uri, "clobbered", meta["etag"])
    assert stale == {"outcome": "conflict", "etag": saved["etag"]}
    assert (root / "inventory/stock.csv").read_text().endswith("Cherries,5\n")
    assert await write(actor, "view-1", one.uri, "x" * 1001) == {
        "outcome": "too-large",
        "maxBytes": 1000,
    }
    page = actor._metrics.render(()).decode()  # type: ignore[union-attr]
    assert 'mcpapps_file_saves_total{outcome="conflict"} 1.0' in page


async def test_what_a_view_may_not_do(actor: WorkspaceActor, root: Path) -> None:
    opened = await open_file(actor, "view-1", "notes.txt")
    with pytest.raises(WriteRefused, match="read it first"):
        await write(actor, "view-1", opened.uri, "unread")
    with pytest.raises(UnknownResource):
        await read(actor, "view-2", opened.uri)  # another view's URI
    with pytest.raises(UnknownResource):
        await read(actor, "view-1", "host-resource://0123456789abcdef0123456789abcdef")
    for bad in ("../outside", "/etc/passwd"):
        with pytest.raises(OutsideWorkspace):
            await open_file(actor, "view-1", bad)
    await read(actor, "view-1", opened.uri)
    actor.mailbox.tell(EndLease("view-1"))
    with pytest.raises(UnknownResource, match="ended"):
        await write(actor, "view-1", opened.uri, "after the end")
    assert (root / "notes.txt").read_text() == "hello\n"


async def test_blobs(actor: WorkspaceActor, root: Path) -> None:
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    opened = await open_file(actor, "v", "logo.png")
    item = await read(actor, "v", opened.uri)
    assert base64.b64decode(item["blob"]) == b"\x89PNG\r\n\x1a\n\x00\xff"
    assert item["mimeType"] == "image/png"
    with pytest.raises(FileRefused, match="not UTF-8"):
        await read(actor, "v", opened.uri, "text")
    as_blob = await read(actor, "v", (await open_file(actor, "v", "notes.txt")).uri, "blob")
    assert base64.b64decode(as_blob["blob"]) == b"hello\n"
    etag_now = item["_meta"]["openai/resource"]["etag"]
    saved = await ask(
        actor.mailbox,
        lambda r: WriteResource(
            "v", opened.uri, None, base64.b64encode(b"new").decode(), etag_now, r
        ),
        10,
    )
    assert saved["outcome"] == "saved"
    assert (root / "logo.png").read_bytes() == b"new"


async def test_an_edit_on_disk_reaches_a_subscriber(actor: WorkspaceActor, root: Path) -> None:
    opened = await open_file(actor, "view-1", "inventory/stock.csv")
    other = await open_file(actor, "view-2", "notes.txt")
    heard: Mailbox[ResourceUpdated] = Mailbox()
    await ask(actor.mailbox, lambda r: Subscribe("view-1", opened.uri, heard, r), 10)
    await ask(actor.mailbox, lambda r: Subscribe("view-2", other.uri, heard, r), 10)
    pane_in, pane = trio.open_memory_channel[WorkspaceChanged](10)
    await ask(actor.mailbox, lambda r: WatchWorkspace(pane_in, r), 10)
    # Another program edits the file, in place.
    (root / "inventory" / "stock.csv").write_text(CSV + "edited\n")
    with trio.fail_after(10):
        async for update in heard:
            assert update == ResourceUpdated("view-1", opened.uri)
            break
        async for change in pane:
            if "inventory/stock.csv" in change.paths:
                break
    listing = await ask(actor.mailbox, lambda r: ListFolder("inventory", r), 10)
    assert [e.name for e in listing.entries] == ["stock.csv"]


# A process killed in the middle of saves.

SAVER = """
import sys
import trio
from pathlib import Path
from actors.files import confine
from actors.files.actor import WorkspaceActor
from actors.files.messages import OpenFile, ReadResource, WriteResource
from actors.runtime import ask
from supervisor.model.workspace import WorkspaceConfig

root, versions = Path(sys.argv[1]), sys.argv[2:]

async def main():
    files = WorkspaceActor(WorkspaceConfig(root=root, max_write_bytes=4 * 1024 * 1024))
    async with trio.open_nursery() as nursery:
        await nursery.start(files.run)
        uris = []
        for name in sorted(p.name for p in root.iterdir()):
            opened = await ask(files.mailbox, lambda r: OpenFile("saver", name, r))
            await ask(files.mailbox, lambda r: ReadResource("saver", opened.uri, None, r))
            uris.append(opened.uri)
        n = 0
        while True:
            async def save(uri, text):
                await ask(files.mailbox, lambda r: WriteResource("saver", uri, text, None, None, r))
            async with trio.open_nursery() as saves:  # every file at once
                for uri in uris:
                    saves.start_soon(save, uri, (versions[n % len(versions)] * 300_000)[:3_000_000])
            n += 1
            print(n, flush=True)

trio.run(main)
"""


def test_a_process_killed_mid_save_leaves_every_file_old_or_new(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    root = tmp_path / "workspace"
    root.mkdir()
    versions = ["A-version-", "B-version-", "C-version-"]
    whole = {(v * 300_000)[:3_000_000] for v in versions}
    original = "original\n" * 1000
    for i in range(4):
        (root / f"sheet-{i}.csv").write_text(original)
    saver = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(root), *versions],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert saver.stdout is not None
        for _ in range(5):  # several rounds of saves done, the next ones under way
            assert saver.stdout.readline(), "the saver stopped before it was killed"
    finally:
        saver.send_signal(signal.SIGKILL)
        saver.wait()
    for i in range(4):
        text = (root / f"sheet-{i}.csv").read_text()
        assert text in whole, f"sheet-{i}.csv is torn ({len(text)} characters)"
    # A save cut short leaves at most its hidden temporary behind, which no listing shows.
    listing = workspace(root).list_folder("")
    assert [e.name for e in listing.entries] == [f"sheet-{i}.csv" for i in range(4)]


async def test_a_save_by_one_view_reaches_the_other(actor: WorkspaceActor, root: Path) -> None:
    one = await open_file(actor, "view-1", "inventory/stock.csv")
    two = await open_file(actor, "view-2", "inventory/stock.csv")
    heard: Mailbox[ResourceUpdated] = Mailbox()
    await ask(actor.mailbox, lambda r: Subscribe("view-2", two.uri, heard, r), 10)
    etag_read = (await read(actor, "view-1", one.uri))["_meta"]["openai/resource"]["etag"]
    assert (await write(actor, "view-1", one.uri, "sku\n", etag_read))["outcome"] == "saved"
    with trio.fail_after(10):
        async for update in heard:
            assert update == ResourceUpdated("view-2", two.uri)
            break
    # Once the last listener's view has ended, nothing watches the workspace any more.
    actor.mailbox.tell(EndLease("view-2"))
    await ask(actor.mailbox, lambda r: ListFolder("", r), 10)  # the EndLease is handled
    assert actor._watch_scope is None


async def test_no_uri_is_minted_for_a_view_that_ended_while_it_opened(root: Path) -> None:
    files = WorkspaceActor(WorkspaceConfig(root=root))
    reply: Reply[Opened] = Reply()
    # Both wait in the mailbox before the actor runs: the end is handled before the open's
    # file is found.
    files.mailbox.tell(OpenFile("view-1", "notes.txt", reply))
    files.mailbox.tell(EndLease("view-1"))
    async with trio.open_nursery() as nursery:
        await nursery.start(files.run)
        with pytest.raises(UnknownResource, match="ended"):
            await reply.wait()
        assert len(files.table) == 0
        assert files._opening == {}
        assert files._ended_while_opening == set()
        nursery.cancel_scope.cancel()


# A view's file requests, as the view door reads them (pure).


def test_the_host_answers_requests_for_its_own_uris_only() -> None:
    uri = "host-resource://0123456789abcdef0123456789abcdef"
    assert is_host_resource("resources/read", {"uri": uri})
    assert is_host_resource("resources/subscribe", {"uri": uri})
    assert is_host_resource("openai/resources/write", {"uri": "ui://x/y.html"})
    assert not is_host_resource("resources/read", {"uri": "ui://grocery/store-dashboard.html"})
    assert not is_host_resource("tools/call", {"uri": uri})
    assert host_capabilities(False) == {}
    assert host_capabilities(True) == {"experimental": {"openai/resource": {}, "openai/files": {}}}


def test_file_request_parameters_are_checked() -> None:
    uri = "host-resource://ab"
    assert representation({"uri": uri}) is None
    assert representation({"_meta": {"openai/resource": {"representation": "blob"}}}) == "blob"
    with pytest.raises(BadFileRequest, match="representation"):
        representation({"_meta": {"openai/resource": {"representation": "xml"}}})
    assert write_params({"uri": uri, "text": "a", "ifMatch": "e1"}) == Write(uri, "a", None, "e1")
    assert write_params({"uri": uri, "blob": "YQ=="}) == Write(uri, None, "YQ==", None)
    for bad, why in [
        ({"text": "a"}, "'uri'"),
        ({"uri": " ", "text": "a"}, "'uri'"),
        ({"uri": uri}, "exactly one"),
        ({"uri": uri, "text": "a", "blob": "YQ=="}, "exactly one"),
        ({"uri": uri, "text": 5}, "'text'"),
        ({"uri": uri, "text": "a", "ifMatch": ""}, "'ifMatch'"),
    ]:
        with pytest.raises(BadFileRequest, match=why):
            write_params(bad)
    assert open_path({"path": "/srv/ws/a.csv"}) == "/srv/ws/a.csv"
    with pytest.raises(BadFileRequest, match="absolute"):
        open_path({"path": "a.csv"})


def test_a_file_views_tool_call_carries_the_path_the_host_sets() -> None:
    call = {
        "name": "summarize",
        "arguments": {},
        "_meta": {"openai/resource": {"path": "/etc/shadow"}, "progressToken": 1},
    }
    amended = with_resource_path(call, "/srv/ws/inventory/stock.csv")
    assert amended["_meta"] == {
        "openai/resource": {"path": "/srv/ws/inventory/stock.csv"},
        "progressToken": 1,
    }
    assert call["_meta"]["openai/resource"] == {"path": "/etc/shadow"}  # not changed in place
    assert with_resource_path({"name": "x"}, "/p")["_meta"] == {"openai/resource": {"path": "/p"}}
