"""The machine's CPU over a run's traffic (testbed.emulation.machine_load): its busy, busiest-second
and steal shares from /proc/stat readings, and the sampler that takes them."""

import time


def test_steal_is_the_stolen_share_of_all_ticks_between_two_readings():
    from testbed.emulation.machine_load import Ticks, steal_share

    assert steal_share(Ticks(100, 0, 10_000), Ticks(150, 0, 10_500)) == 0.1
    assert steal_share(Ticks(100, 0, 10_000), Ticks(100, 0, 10_000)) is None  # no time passed: no share to give
    assert steal_share(None, Ticks(150, 0, 10_500)) is None


def test_this_machines_cpu_ticks_are_read_from_proc_stat(monkeypatch, tmp_path):
    from testbed.emulation import machine_load

    stat = tmp_path / "stat"
    stat.write_text("cpu  10 1 5 80 2 0 1 7 3 0\ncpu0 5 0 2 40 1 0 0 4 0 0\n")
    real_path = machine_load.Path
    monkeypatch.setattr(machine_load, "Path", lambda p: stat if p == "/proc/stat" else real_path(p))
    # steal 7; idle and iowait 82; guest time is inside user time: not counted twice
    assert machine_load.machine_cpu_ticks() == (7, 82, 106)
    stat.write_text("")
    assert machine_load.machine_cpu_ticks() is None


def test_the_busiest_second_is_the_highest_busy_share_between_readings_a_second_apart():
    from testbed.emulation.machine_load import shares

    # [t_s, steal, idle, total]: 200 ticks a second on 2 cores
    samples = [[0.0, 0, 1000, 2000], [1.0, 0, 1100, 2200], [2.0, 2, 1102, 2400], [3.0, 2, 1200, 2600],
               [3.2, 2, 1201, 2640]]  # the last interval is too short to give a second's share
    got = shares(samples)
    assert got["machine_cpu_busiest_second_share"] == 0.99  # 198 of 200 ticks busy in the third second
    assert got["machine_cpu_busy_share"] == round(1 - 201 / 640, 4)
    assert got["machine_cpu_steal_share"] == round(2 / 640, 4)
    assert shares(samples[:1]) == {"machine_cpu_busy_share": None, "machine_cpu_busiest_second_share": None,
                                   "machine_cpu_steal_share": None}
    assert shares([[0.0, 0, 1000, 2000], [0.2, 0, 1001, 2040]])["machine_cpu_busiest_second_share"] is None


def test_machine_load_reads_at_its_start_every_period_and_at_its_stop():
    from testbed.emulation.machine_load import MachineLoad, Ticks

    readings = iter(Ticks(0, 100 * i, 200 * i) for i in range(1, 1000))
    load = MachineLoad(read=lambda: next(readings), period_s=0.05).start()
    time.sleep(0.3)
    got = load.stop()
    samples = got["machine_cpu_samples"]
    assert len(samples) >= 4 and samples[0][1:] == [0, 100, 200]
    assert [s[0] for s in samples] == sorted(s[0] for s in samples)  # in time order
    assert got["machine_cpu_busy_share"] == 0.5  # every reading half idle
    assert not load._thread.is_alive()
