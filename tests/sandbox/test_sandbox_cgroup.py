"""Finding a delegated cgroup v2 for the sandbox's runs, and reading what a run's cgroup saw
(the kernel's part is stood in by plain files; tests/sandbox/test_sandbox_limits.py runs the
real one)."""

from __future__ import annotations

from pathlib import Path

from palui.sandbox.cgroup import RunCgroup, Usage, find


def fake_proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return proc


def test_without_a_cgroup_v2_mount_the_rlimits_hold(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path,
        "35 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
        "4:memory:/\n",
    )
    assert find(proc) == "no cgroup v2 hierarchy is mounted"


def test_a_cgroup_without_delegated_controllers_is_not_used(tmp_path: Path) -> None:
    mount = tmp_path / "unified"
    (mount / "service").mkdir(parents=True)
    (mount / "service" / "cgroup.subtree_control").write_text("hugetlb\n")
    (mount / "cgroup.subtree_control").write_text("")
    proc = fake_proc(tmp_path, f"36 25 0:31 / {mount} rw - cgroup2 cgroup2 rw\n", "0::/service\n")
    # Plain files take the "+memory +pids" write; the run cgroup then has no memory.max.
    reason = find(proc)
    assert isinstance(reason, str)
    assert f"{mount / 'service'}: a capped child cgroup can't be made" in reason
    assert f"{mount}: a capped child cgroup can't be made" in reason
    assert [p.name for p in (mount / "service").iterdir()] == ["cgroup.subtree_control"]


def test_a_runs_cgroup_reports_its_peak_and_what_its_caps_stopped(tmp_path: Path) -> None:
    (tmp_path / "memory.peak").write_text("268435456\n")
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
    (tmp_path / "pids.events").write_text("max 3\n")
    assert RunCgroup(tmp_path).usage() == Usage(268435456, oom_killed=True, process_capped=True)
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    assert RunCgroup(quiet).usage() == Usage()
