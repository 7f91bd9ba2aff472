"""The fidelity measure: percentiles of dequeue lag."""

from testbed.p4model.tm import LagStats


def test_percentiles_exact_below_a_millisecond():
    lag = LagStats()
    for us in range(1, 101):
        lag.record(us * 1000 + 999)
    summary = lag.summary()
    assert summary == {"samples": 100, "max_lag_us": 100, "p99_lag_us": 99, "mean_lag_us": 51.499}


def test_large_lags_are_never_understated():
    lag = LagStats()
    for _ in range(98):
        lag.record(0)
    lag.record(5_000_000)  # 5 ms
    lag.record(3_000_000)
    assert lag.percentile_us(0.99) >= 3000
    assert lag.percentile_us(1.0) == 5000
    assert lag.percentile_us(0.5) == 0
    lag.record(-10)
    assert lag.count == 101 and LagStats().summary()["p99_lag_us"] == 0


def test_on_time_count_is_record_zero():
    a, b = LagStats(), LagStats()
    for lag in (0, 1500, 0, 70_000, 0, 0, 0):
        a.record(lag)
        if lag:
            b.record(lag)
        else:
            b.on_time += 1
    assert a.summary() == b.summary()
    for fraction in (0.1, 0.5, 0.6, 0.7, 0.9, 1.0):
        assert a.percentile_us(fraction) == b.percentile_us(fraction), fraction
