"""stoker.DataLoader: a local run whose trainer is this Python loop."""

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch

import stoker
from conftest import NODE, small_run, run_script


def iterate(loader, epochs=None):
    """Every batch of the given epochs: (epoch, ids, checksums, labels)."""
    seen = []
    for epoch in range(loader.epochs if epochs is None else epochs):
        assert loader.epoch == epoch
        for images, labels in loader:
            info = loader.last_batch
            assert info.epoch == epoch
            assert images.dtype == torch.float32
            assert images.shape == (len(info.sample_ids), 3, 32, 32)
            seen.append((epoch, list(info.sample_ids),
                         stoker.image_checksums(images), labels.tolist(),
                         list(info.checksums)))
    return seen


def test_the_runs_lines_go_to_the_logger_stoker_not_to_stdout(capfd,
                                                               caplog):
    caplog.set_level(logging.DEBUG, logger="stoker")
    keys = small_run(pipeline={"epochs": 1}, trainer={"log_every": 4})
    with stoker.DataLoader(**keys) as loader:
        for _ in loader:
            pass
    out, err = capfd.readouterr()
    said = [r for r in caplog.records if r.name == "stoker"]
    steps = [r for r in said if r.getMessage().startswith("Iteration 4:")]
    assert len(steps) == 1 and steps[0].levelno == logging.INFO, \
        [r.getMessage() for r in said]
    assert "Iteration" not in out + err, out + err
    # log.level filters where the lines are said, before Python's logging
    caplog.clear()
    keys["log"] = {"level": "warning"}
    with stoker.DataLoader(**keys) as loader:
        for _ in loader:
            pass
    assert not [r for r in caplog.records
                if r.name == "stoker" and r.levelno < logging.WARNING]


def test_two_epochs_deliver_every_sample_once_with_its_bits_and_label():
    loader = stoker.DataLoader(**small_run())
    assert len(loader) == 12 and loader.epochs == 2
    seen = iterate(loader)
    loader.close()
    for epoch in range(2):
        ids = [i for e, batch, *_ in seen if e == epoch for i in batch]
        assert sorted(ids) == list(range(192))  # each sample once
        assert sum(1 for e, *_ in seen if e == epoch) == len(loader)
    for _, ids, mine, labels, stamped in seen:
        assert mine == stamped  # the bits the worker wrote, unchanged
        assert labels == [i % 10 for i in ids]  # synthetic: id % classes
    report = loader.report
    assert report["status"] == "ok"
    assert report["missing"] == 0 and report["duplicates"] == 0
    assert report["trainers"][0]["device"] == "python"
    # The same seed with one worker: the same bits for each (epoch, id),
    # as any trainer of this run receives them.
    again = stoker.DataLoader(**small_run(worker={"count": 1}))
    one = {(e, i): c for e, ids, _, _, cs in iterate(again)
           for i, c in zip(ids, cs)}
    again.close()
    two = {(e, i): c for e, ids, _, _, cs in seen for i, c in zip(ids, cs)}
    assert one == two


def test_batches_reach_the_loop_without_a_copy_and_their_buffers_come_back():
    loader = stoker.DataLoader(**small_run(pipeline={"epochs": 3}))
    pointers = set()
    for _ in range(loader.epochs):
        for images, _ in loader:
            pointers.add(images.data_ptr())
            images.sum()  # the loop touches it
    loader.close()
    assert loader.bytes_copied == 0  # every tensor spans a pooled buffer
    # 36 batches through a handful of buffers: each tensor freed gave its
    # buffer back to the pool the workers take theirs from.
    assert len(pointers) <= 12, len(pointers)


def test_a_buffer_the_loop_keeps_stays_intact():
    loader = stoker.DataLoader(**small_run(pipeline={"epochs": 1}))
    kept = []
    for images, _ in loader:
        kept.append((images, list(loader.last_batch.checksums)))
    loader.close()
    for images, stamped in kept:  # never recycled under the loop's feet
        assert stoker.image_checksums(images) == stamped


def test_state_dict_mid_epoch_resumes_with_every_sample_once():
    first = stoker.DataLoader(**small_run())
    taken = []
    for images, _ in first:
        taken.extend(first.last_batch.sample_ids)
        if len(taken) >= 5 * 16:
            break
    state = first.state_dict()
    first.close()  # ends its run early: the rest is the next loader's
    # Stopped on purpose, not failed; its steps are the loop's, all of
    # them (the last two went uncounted before).
    stopped = first.report
    assert stopped["status"] == "stopped", stopped
    assert "the loop closed its loader at loader.epoch 0 (0 of 2 epoch(s) " \
        "done)" in stopped["stopped_by"], stopped
    assert stopped["steps"] == len(taken) // 16, stopped
    assert stopped["samples_delivered"] == len(taken), stopped
    assert stopped["duplicates"] == 0
    assert stopped["missing"] == 2 * 192 - len(taken), stopped
    assert state["epoch"] == 0
    second = stoker.DataLoader(**small_run())
    second.load_state_dict(state)
    assert second.epoch == 0
    rest = iterate_from(second)
    second.close()
    epoch0 = taken + [i for e, ids in rest if e == 0 for i in ids]
    assert sorted(epoch0) == list(range(192))  # once each, none twice
    epoch1 = [i for e, ids in rest if e == 1 for i in ids]
    assert sorted(epoch1) == list(range(192))
    report = second.report
    assert report["missing"] == 0 and report["duplicates"] == 0
    assert report["status"] == "ok"



def stop_from_the_console(port):
    """Says `shutdown` to a console on this machine's `port`, as `nc`
    would; returns the console's answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(b"shutdown\n")
        said = b""
        while b"stopping" not in said:
            chunk = c.recv(4096)
            if not chunk:
                break
            said += chunk
        return said.decode()


def test_a_run_stopped_on_purpose_is_stopped_from_stoker_node_and_python(
        tmp_path):
    # The same verdict on both paths (judge_run): stoker-node exits 0 and
    # Python's close() raises nothing, and both reports say "stopped".
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    report = tmp_path / "node.json"
    node = subprocess.Popen(
        [NODE, "--role=local", "--trainer.device=sim",
         "--trainer.sim-step-ms=10", "--pipeline.height=32",
         "--pipeline.width=32", "--pipeline.dataset-size=64000",
         "--pipeline.batch-size=16", "--worker.count=2", "--progress=off",
         "--console.port=%d" % port, "--report=%s" % report],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=os.environ.copy())
    try:
        lines = []
        for line in node.stdout:
            lines.append(line)
            if line.startswith("Iteration"):  # its loop is training
                break
        assert "stopping" in stop_from_the_console(port), "".join(lines)
        out, _ = node.communicate(timeout=30)
    finally:
        if node.poll() is None:
            node.kill()
    from_node = json.loads(report.read_text())
    assert node.returncode == 0, "".join(lines) + out
    loader = stoker.DataLoader(**small_run(pipeline={"dataset_size": 6400}))
    for step, _ in enumerate(loader):
        if step == 3:
            break
    loader.close()  # RunFailed here would be a different verdict
    from_python = loader.report
    for report in (from_node, from_python):
        assert report["status"] == "stopped", report
        assert report["stopped_by"], report
        assert report["duplicates"] == 0, report
        assert report["missing"] > 0, report  # early: not every sample

def iterate_from(loader):
    out = []
    for epoch in range(loader.epoch, loader.epochs):
        for _ in loader:
            out.append((epoch, list(loader.last_batch.sample_ids)))
    return out


def test_an_iterator_left_early_is_taken_up_where_it_stopped():
    loader = stoker.DataLoader(**small_run(pipeline={"epochs": 1}))
    ids = []
    for _ in loader:
        ids.extend(loader.last_batch.sample_ids)
        if len(ids) >= 32:
            break
    for _ in loader:
        ids.extend(loader.last_batch.sample_ids)
    loader.close()
    assert sorted(ids) == list(range(192))
    with pytest.raises(RuntimeError, match="pipeline.epochs"):
        iter(loader)


def test_bad_keys_and_values_raise_config_error_with_the_nodes_message():
    with pytest.raises(stoker.ConfigError, match="flat key") as flat:
        stoker.DataLoader(**{"pipeline.batch-size": 64})
    assert "pipeline={'batch_size': ...}" in str(flat.value)
    assert isinstance(flat.value, ValueError)
    with pytest.raises(stoker.ConfigError, match="batch-size"):
        stoker.DataLoader(pipeline={"batch_size": 0})
    with pytest.raises(stoker.ConfigError, match="no-such-key"):
        stoker.DataLoader(pipeline={"no_such_key": 1})
    with pytest.raises(stoker.ConfigError, match="trainer.count"):
        stoker.DataLoader(trainer={"count": 2})
    with pytest.raises(stoker.ConfigError, match="expected a dict|expected a bool"):
        stoker.DataLoader(pipeline={"batch_size": object()})
    # A typo names the nearest key; a wrong type names key, value and what
    # was expected; never CAF's parser_error(...).
    for keys, words in (({"batch_sise": 64}, "did you mean 'batch-size'?"),
                        ({"batch_size": "abc"},
                         'pipeline.batch-size = "abc": expected an integer'),
                        ({"batch_size": True},
                         "pipeline.batch-size = true: expected an integer")):
        with pytest.raises(stoker.ConfigError) as bad:
            stoker.DataLoader(pipeline=keys)
        assert words in str(bad.value), str(bad.value)
        assert "parser_error" not in str(bad.value), str(bad.value)


LOOP = """
import stoker, sys, time
loader = stoker.DataLoader(pipeline={"height": 32, "width": 32,
    "dataset_size": 4096, "batch_size": 16, "epochs": 1}, worker={"count": 1})
for i, (x, y) in enumerate(loader):
    print("step", i, flush=True)
    %s
"""


def test_an_exception_in_the_loop_exits_non_zero_without_hanging():
    proc = subprocess.Popen(
        [sys.executable, "-c",
         LOOP % "if i == 3: raise ZeroDivisionError('in the loop')"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ.copy())
    for line in proc.stdout:  # the loop's last step, then the raise
        if line.startswith("step 3"):
            break
    raised = time.monotonic()
    out, err = proc.communicate(timeout=60)
    # Within seconds of the exception, not within the minute allowed above.
    assert time.monotonic() - raised < 5, err
    assert proc.returncode != 0
    assert "ZeroDivisionError" in err


def test_ctrl_c_in_the_loop_stops_it():
    proc = subprocess.Popen([sys.executable, "-c", LOOP % "time.sleep(0.05)"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=os.environ.copy())
    line = proc.stdout.readline()
    assert line.startswith("step"), line
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in err


def test_only_a_dataloader_loads_a_state_dict():
    # A Trainer takes its state when it is made (state=STATE): it has no
    # load_state_dict that could only raise.
    assert callable(stoker.DataLoader.load_state_dict)
    assert not hasattr(stoker.Trainer, "load_state_dict")


def test_the_interface_gloo_listens_on_comes_from_its_address():
    assert stoker._interface_of("127.0.0.1") == "lo"
    assert stoker._interface_of("0.0.0.0") is None
    assert stoker._interface_of("192.0.2.1") is None  # TEST-NET-1: nobody's
