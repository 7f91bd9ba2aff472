"""The report prints DCQCN's constants as the variant ran them, in absolute units."""

from testbed.telemetry.report import dcqcn_parameters


def resolved(cc="dcqcn", queues=2):
    return {
        "links": {"host": {"rate_mbps": 5.0}},
        "switch": {"priority_queues": queues},
        "fabric": {"ecn": {"mode": "red", "kmin_cells": 4, "kmax_cells": 16, "pmax": 0.2}},
        "derived": {"base_rtt_us": 27000.0, "bdp_cells": 16, "cell_wire_bytes": 1090},
        "transport": {"cc": cc, "dcqcn": {"g": 1 / 256, "r_ai_fraction": 0.001, "hyper_factor": 10.0,
                                         "timer_rtt": 5.0, "byte_counter_bytes": 3_078_750,
                                         "cnp_interval_rtt": 5.0, "fast_recovery_steps": 5}},
    }


def test_dcqcn_parameters_in_absolute_units():
    text = dcqcn_parameters(resolved())
    assert "Kmin 4 / Kmax 16 cells (4.4 / 17.4 KB" in text and "Pmax 0.2" in text
    assert "1/256" in text
    assert "timer T 135.0 ms (5 base RTTs of 27.0 ms)" in text
    # 5 Mbit/s x 135 ms = 84,375 B per timer period; 3,078,750 B is 36.5 of them
    assert "B 3,078,750 B (36.5 timer periods at line rate)" in text
    assert "R_AI 5.00 kbit/s" in text and "R_HAI 50.00 kbit/s" in text
    assert "priority 1 (ahead of data)" in text
    assert "priority 0 (with data)" in dcqcn_parameters(resolved(queues=1))


def test_other_ccs_print_nothing():
    assert dcqcn_parameters(resolved(cc="tita")) is None
