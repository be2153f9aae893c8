"""Saving never destroys what it writes over: regular files atomically (through symlinks, modes
kept, new files by the umask), FIFOs and character devices as streams, folders refused; and the
CLI's `run --trace` / `plot --out` on a folder. Every device file here is made in tmp_path."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

import parallelgraph as pg
from parallelgraph.cli import main

REAL = Path(__file__).parent / "fixtures" / "real"


@pytest.fixture(scope="module")
def trace():
    return pg.Trace.load(REAL / "tf_seed_inter2.ctf.json")


def test_save_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path, trace):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    trace.save(link)
    assert link.is_symlink() and os.readlink(link) == target.name
    assert pg.Trace.load(target).events == trace.events
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_save_keeps_an_existing_files_mode_and_gives_new_files_the_umask(tmp_path, trace):
    existing = tmp_path / "kept.json"
    existing.write_text("old")
    existing.chmod(0o640)
    trace.save(existing)
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        fresh = trace.save(tmp_path / "new.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640  # 0666 & ~0027, as open() gives


def test_save_to_a_fifo_streams_into_it_and_leaves_the_fifo(tmp_path, trace):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader_open = threading.Event()

    def read() -> None:
        with open(fifo, "rb") as pipe:
            reader_open.set()
            received.append(pipe.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        for _ in range(200):  # the reader must be there before the writer opens the FIFO
            if reader_open.is_set():
                break
            try:
                trace.save(fifo)
                break
            except OSError as problem:
                assert "no reader" in str(problem)
                threading.Event().wait(0.01)
        reader.join(10)
    finally:
        if reader.is_alive():  # unblock the reader should the save have gone elsewhere
            with open(fifo, "wb"):
                pass
            reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and received[0].startswith(b"{") and b"traceEvents" in received[0]


def test_save_to_a_fifo_without_reader_is_refused_not_replaced(tmp_path, trace):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match=r"pipe: a FIFO with no reader"):
        trace.save(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_save_to_a_character_device_streams_into_it(tmp_path, trace):
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device, in tmp_path
    except (PermissionError, AttributeError) as problem:
        pytest.skip(f"cannot make a device node here: {problem}")
    trace.save(node)
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_save_to_a_folder_is_refused_and_the_folder_kept(tmp_path, trace):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "keep.txt").write_text("x")
    with pytest.raises(OSError, match=r"out: is a folder"):
        trace.save(folder)
    assert folder.is_dir() and [p.name for p in folder.iterdir()] == ["keep.txt"]


def test_run_trace_to_a_folder_keeps_the_report_and_says_the_error(tmp_path, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    argv = ["run", "--size", "tiny", "--repeats", "1", "--executor", "sequential"]
    code = main([*argv, "--trace", str(folder)])
    captured = capsys.readouterr()
    assert code == 2
    assert "median makespan" in captured.out
    errors = captured.err.strip().splitlines()
    assert len(errors) == 1 and "is a folder" in errors[0] and str(folder) in errors[0]
    assert folder.is_dir()


def test_plot_out_writes_exactly_the_name_given_or_refuses_a_folder(tmp_path, capsys):
    source = str(REAL / "tf_seed_inter2.ctf.json")
    folder = tmp_path / "pictures"
    folder.mkdir()
    assert main(["plot", source, "--out", str(folder)]) == 2
    captured = capsys.readouterr()
    assert "wrote" not in captured.out and "is a folder" in captured.err
    assert list(tmp_path.iterdir()) == [folder] and not list(folder.iterdir())
    plain = tmp_path / "timeline"  # no suffix: PNG, under exactly this name
    assert main(["plot", source, "--out", str(plain)]) == 0
    assert f"wrote {plain}:" in capsys.readouterr().out
    assert plain.read_bytes()[:4] == b"\x89PNG" and not plain.with_suffix(".png").exists()


def test_save_errors_name_the_path_given(tmp_path, trace):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError, match=r"file/t.json: a part of the path is not a folder"):
        trace.save(blocker / "t.json")
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop.name)
    with pytest.raises(OSError, match=r"loop.json: cannot write there"):
        trace.save(loop)
    assert loop.is_symlink()


def test_save_as_root_keeps_the_replaced_files_owner(tmp_path, trace):
    if os.geteuid() != 0:
        pytest.skip("only root may give a file to another user")
    owned = tmp_path / "theirs.json"
    owned.write_text("old")
    os.chown(owned, 65534, 65534)
    trace.save(owned)
    assert (owned.stat().st_uid, owned.stat().st_gid) == (65534, 65534)


@pytest.mark.parametrize("umask", [0o002, 0o077])
def test_every_file_the_cli_writes_follows_the_umask_and_a_replaced_one_keeps_its_mode(
    tmp_path, trace, umask
):
    """New files (a trace, a gzipped trace, a picture) get 0666 & ~umask, the mode open()
    gives, whatever the umask (never a temporary file's 0600); a replaced file keeps its own
    mode, neither narrowed by a strict umask nor widened by a loose one."""
    kept = {"wide.json": 0o664, "narrow.json": 0o600}
    for name, mode in kept.items():
        (tmp_path / name).write_text("old")
        (tmp_path / name).chmod(mode)
    old = os.umask(umask)
    try:
        argv = ["run", "--size", "tiny", "--repeats", "1", "--executor", "sequential"]
        assert main([*argv, "--trace", str(tmp_path / "run.json.gz")]) == 0
        source = str(REAL / "tf_seed_inter2.ctf.json")
        assert main(["plot", source, "--out", str(tmp_path / "timeline.png")]) == 0
        trace.save(tmp_path / "saved.json")
        for name in kept:
            trace.save(tmp_path / name)
    finally:
        os.umask(old)
    for name in ("run.json.gz", "timeline.png", "saved.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name
    for name, mode in kept.items():
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
        assert pg.Trace.load(tmp_path / name).events == trace.events
