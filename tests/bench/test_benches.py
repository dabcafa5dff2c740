"""The benchmarks under bench/ run end to end on tiny inputs and report what they moved (never timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stream.pipeline.partitioner import partition_for

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def run_bench(script: str, *args: str) -> str:
    """The standard output of ``python bench/<script> <args>``, which must exit 0."""
    run = subprocess.run([sys.executable, str(REPO / "bench" / script), *args], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_floor_bench_moves_every_mandated_message_and_reports_ratios() -> None:
    out = run_bench("floor.py", "--sizes", "10", "--rounds", "3")
    row = next(line for line in out.splitlines() if line.startswith("| 10 |"))
    cells = [cell.strip().strip("*") for cell in row.strip("|").split("|")]
    size, rounds, participations, messages = (int(c.replace(",", "")) for c in cells[:4])
    assert (size, rounds, participations) == (10, 3, 30)
    # per round: the round itself, one fan-out per partition holding some of its 10 players (1 to 4), 10 events
    assert 3 + 3 + 30 <= messages <= 3 + 12 + 30
    figures = [float(c.rstrip("x")) for c in cells[4:]]  # confluent_kafka is in the test extra: no "nan"
    assert all(value >= 0 for value in figures) and figures[-1] > 0


def table_rows(out: str, header_start: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with ``header_start`` (header and rule left out)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip().strip("*") for cell in line.strip("|").split("|")])
    return rows


def number(cell: str) -> float:
    return float(cell.replace(",", "").removesuffix(" ms").rstrip("x%"))


def test_pipeline_bench_throughput_mode_rates_every_round_next_to_its_floor() -> None:
    out = run_bench("pipeline.py", "--size", "2,10", "--mode", "throughput", "--rounds", "12", "--workers", "1",
                    "--startup-s", "2")
    floor = {row[0]: row for row in table_rows(out, "| players/round | rounds | participations | messages |")}
    assert set(floor) == {"2", "10"} and floor["2"][1:3] == ["12", "24"] and floor["10"][1:3] == ["12", "120"]
    rows = {row[0]: row for row in table_rows(out, "| players/round | ladders | pool |")}
    assert set(rows) == {"2", "10"}
    for size, row in rows.items():
        ladders, pool, rounds, participations = (int(number(c)) for c in row[1:5])
        assert (ladders, pool, rounds, participations) == (2, 2_000, 12, 12 * int(size))
        rounds_per_s, part_per_s, floor_rate, ratio = number(row[5]), number(row[6]), number(row[8]), number(row[9])
        assert rounds_per_s > 0 and part_per_s > 0 and floor_rate > 0
        assert abs(ratio - floor_rate / part_per_s) <= 0.05 * ratio + 0.05  # the ratio printed is the ratio of the two
        assert number(row[13]) >= 0  # the bench's own clients' CPU
        if row[14] == "-":  # no CPU tick counted over so short a burst
            assert number(row[10]) == 0
        else:
            shares = [float(share.rstrip("%")) for share in row[14].split(" / ")]
            assert len(shares) == 1 and abs(sum(shares) - 100) <= 1  # one worker: all of the workers' CPU
        assert [int(p) for p in row[15].split(", ")] == [partition_for(f"burst{size}-r0-{k}", 4) for k in range(2)]
    assert "load average" in out and "Latency:" not in out


def test_pipeline_bench_latency_mode_at_a_fixed_rate() -> None:
    out = run_bench("pipeline.py", "--size", "2", "--mode", "latency", "--rate", "10", "--latency-seconds", "1.5",
                    "--workers", "1", "--startup-s", "2", "--breakdown")
    [row] = table_rows(out, "| players/round | offered rounds/s | offered part./s |")
    assert row[0] == "2" and number(row[1]) == 10.0 and number(row[2]) == 20.0 and row[4] == "15"
    p50, p99, worst = number(row[5]), number(row[6]), number(row[7])
    assert 0 < p50 <= p99 <= worst
    assert number(row[3]) > 0 and "Throughput:" not in out
    # --breakdown: the workers' batches of the run, phase one then phase two, each with its steps
    batches = table_rows(out, "| players/round | phase | batches/s |")
    assert [r[:2] for r in batches] == [["2", "1"], ["2", "2"]]
    assert batches[0][5].startswith("handle ") and batches[0][6].startswith("acks ")
    assert batches[1][5].startswith("apply ") and batches[1][6].startswith("emit ")
    assert all(number(r[2]) > 0 for r in batches)


def test_soak_ceiling_mode_reports_each_stage_and_checks_equality() -> None:
    out = run_bench("soak.py", "--rates", "2,4", "--stage", "3", "--large-every", "2", "--large-size", "20",
                    "--workers", "1", "--stop-after", "2")
    rows = table_rows(out, "| small rounds/s | large every |")
    assert [row[0] for row in rows] == ["2", "4"]
    for row in rows:
        assert number(row[2]) > 0 and row[6] in ("yes", "NO")
    assert "Ceiling (bounded" in out and "max diff" in out and out.rstrip().endswith("OK.")


def test_broker_growth_reports_each_chunk_against_the_first_for_each_request_size() -> None:
    out = run_bench("broker_growth.py", "--chunks", "3", "--chunk", "200", "--per-request", "1,100", "--probes", "8")
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 6  # 3 chunks per request size
    one, hundred = rows[:3], rows[3:]
    for table in (one, hundred):
        assert [int(number(cells[0])) for cells in table] == [200, 400, 600]  # log size after each chunk
        # the first chunk is the reference (n/a when the broker used no CPU tick in it)
        assert table[0][4] in ("1.0x", "n/a") and all(number(cells[3]) >= 0 for cells in table)
    # one message per request: one batch per message, (600 + 3 x 8 probes) / 4 per partition after 600
    # messages; 100 per request: at most 4 batches per request (one per partition), 6 requests, and the probes
    assert int(number(one[-1][1])) == (600 + 3 * 8) // 4 and 1 + 6 <= int(number(hundred[-1][1])) <= 6 + 6
    # every chunk's hop: 8 probes sent and read back, p50 <= p90
    assert all(0 < number(cells[5]) <= number(cells[6]) for cells in one + hundred)


@pytest.mark.parametrize("placement", [(), ("--api", "process", "--pipeline-nice", "10")], ids=["worker", "niced"])
def test_api_bench_measures_every_endpoint_idle_and_busy(placement: tuple[str, ...]) -> None:
    out = run_bench("api.py", "--rounds", "10", "--clients", "2", "--seconds", "0.3", "--busy-rate", "20", *placement)
    rows = [line.strip("|").split("|") for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    table = {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows[1:]}
    assert {"/health", "leaderboard page", "search, no match", "player (200 history)", "predict (3 players)",
            "distribution", "rounds over time", "player ranks (200)"} <= set(table)
    assert table["/health"][3] == "1.00" and table["/health"][6] == "1.00"
    for name, cells in table.items():
        idle, busy, errors = float(cells[0].replace(",", "")), float(cells[4].replace(",", "")), int(cells[-1])
        assert idle > 0 and busy > 0 and errors == 0, (name, cells)
    assert "more rounds rated while measuring" in out and " 0 more rounds" not in out
    assert ("niceness 10" in out) == bool(placement)


def test_backfill_bench_reports_both_commands_and_the_ratio() -> None:
    out = run_bench("backfill.py", "--rounds", "4", "--round-size", "20", "--players", "60", "--repeat", "1")
    assert "(80 participations)" in out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| stream ")}
    assert set(rows) == {"stream replay", "stream backfill"}
    assert "backfill / replay:" in out and "bytes per participation" in out


def test_corrections_bench_reports_both_voids_next_to_replay() -> None:
    out = run_bench("corrections.py", "--rounds", "300", "--players", "40", "--depth", "0.2", "--shallow", "3")
    assert "300 duels from 40 players" in out
    assert "| `stream replay` of the ladder" in out and "| `stream.batch.replay` of the ladder" in out
    voids = [line for line in out.splitlines() if line.startswith("| void of round")]
    assert len(voids) == 2 and "round 61 (deep: 239 later rounds)" in voids[0] and "(shallow: 2 later" in voids[1]
    assert all("rerate" in line and "write" in line for line in voids)
    assert all(line.count(" + ") == 1 for line in voids), "CPU time: this process + redis-server"
    inserts = [line for line in out.splitlines() if line.startswith("| insert of a late duel")]
    assert len(inserts) == 1 and "before round 61 (240 later rounds)" in inserts[0], inserts
    assert "Redis == replay of the corrected history for all 40 players" in out


def test_memory_bench_reports_every_scenario() -> None:
    out = run_bench("memory.py", "--duels", "30", "--pool", "10", "--contests", "3", "--contest-size", "20",
                    "--contest-pool", "40")
    titles = [line for line in out.splitlines() if "participations" in line and ":" in line and "players" in line]
    assert len(titles) == 6  # 2 duel presets and a contest history, each before and after retention
    assert "30 duels, preset mmr," in titles[0] and "60 participations" in titles[0]
    assert "| round-results |" in out and "| **player keys" in out


def test_handlers_bench_compares_phase_two_with_and_without_its_check() -> None:
    out = run_bench("handlers.py", "--size", "10", "--rounds", "5", "--pool", "30", "--compare-verify", "--repeat", "1")
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| handlers: ")}
    assert set(rows) == {"handlers: wall", "handlers: process CPU", "handlers: redis-server CPU"}
    for row in rows.values():
        off, on = (float(cell) for cell in row.split("|")[2:4])
        assert off > 0 and on > 0


def test_idle_bench_reports_cpu_and_first_round_latency() -> None:
    out = run_bench("idle.py", "--gap-s", "1", "--samples", "2")
    row = next(line for line in out.splitlines() if line.startswith("| this commit |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1].endswith("% of a core") and float(cells[1].split()[0]) >= 0
    p50, p99, worst = (float(cell.removesuffix(" ms")) for cell in cells[2:5])
    assert 0 < p50 <= p99 <= worst


def test_teams_bench_scores_every_model_on_both_leagues() -> None:
    out = run_bench("teams.py", "--rounds", "60", "--players", "60", "--no-package")
    for league in ("2 teams of 5", "10 teams of 3"):
        assert league in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("elo-mmr-teams", "trueskill", "openskill"))]
    assert len(rows) == 6
    for row in rows:
        pair, rank = float(row[-3]), float(row[-2])
        assert 0.0 <= pair <= 100.0 and 0.0 <= rank <= 100.0


def test_rounds_batch_bench_times_the_engine_call_next_to_openskill() -> None:
    out = run_bench("rounds_batch.py", "--rounds", "200", "--warm", "300", "--repeat", "1")
    rows = [line.strip().strip("|").split("|") for line in out.splitlines()
            if line.startswith(("| duels-", "| lobbies-"))]
    assert [cells[0].strip() for cells in rows] == ["duels-2000", "lobbies-2000", "duels-20", "lobbies-20"]
    for cells in rows:
        assert all(float(cells[i]) > 0 for i in (4, 5))  # engine, openskill µs/part.
        assert float(cells[6].strip().rstrip("x")) > 0  # the same run's ratio


def test_engine_bench_reports_every_part_against_its_reference() -> None:
    out = run_bench("engine.py", "--quick")
    assert "(a) synthetic" in out and "single round n=2,000" in out
    history = [line for line in out.splitlines() if line.startswith("  | paper-codeforces |") or line.startswith("  | mmr |")]
    assert len(history) == 2
    for line in history:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert float(cells[3].rstrip("x")) > 0 and 0 < float(cells[4]) <= 100  # speed ratio, pair-exp
    matches = [line for line in out.splitlines() if line.startswith("  | 2 |") or line.startswith("  | 10 |")]
    assert len(matches) == 2 and all(float(line.strip().strip("|").split("|")[-1].strip().rstrip("x")) > 0
                                     for line in matches)


def test_handlers_bench_times_chained_batches_next_to_a_git_ref() -> None:
    out = run_bench("handlers.py", "--size", "2", "--rounds", "12", "--pool", "6", "--batch-rounds", "1,12",
                    "--before", "HEAD", "--repeat", "1")
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| 1") and "|---" not in line]
    assert [(row[0], row[1]) for row in rows] == [("1", "this tree"), ("1", "at HEAD"), ("12", "this tree"),
                                                  ("12", "at HEAD")]
    for row in rows:
        assert all(float(cell) > 0 for cell in row[2:5]), row
    # this tree rates the chains of a 12-round batch of 6 players as replay does
    assert float(rows[2][5]) <= 1e-9 and float(rows[0][5]) <= 1e-9


def test_handlers_bench_compares_team_rounds_with_individual_rounds_of_the_same_size() -> None:
    out = run_bench("handlers.py", "--teams", "8", "--rounds", "16", "--pool", "60", "--repeat", "1")
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines() if line.startswith("| ")}
    for label in ("individual, 10 players", "2 teams of 5", "individual, 30 players", "10 teams of 3"):
        assert float(rows[label][2]) > 0 and float(rows[label][3]) > 0, label
    for label in ("2 teams of 5", "10 teams of 3"):
        wall, cpu = (float(x) for x in rows[label][5].split(","))
        assert wall > 0 and cpu > 0


def test_fetch_wait_bench_reports_each_wait_and_gap() -> None:
    out = run_bench("fetch_wait.py", "--wait-ms", "20", "--gaps", "0,0.5", "--records", "2")
    rows = table_rows(out, "| fetch_max_wait_ms |")
    assert [row[:2] for row in rows] == [["20", "0.00"], ["20", "0.50"]]
    assert all(0 < number(row[2]) <= number(row[3]) for row in rows)


def test_cli_start_bench_reports_every_case_next_to_python_alone() -> None:
    out = run_bench("cli_start.py", "--runs", "1")
    rows = table_rows(out, "| command")
    names = [row[0].strip("`") for row in rows]
    assert names == ["python -c pass", "stream --help", "stream leaderboard --help",
                     "stream leaderboard x (Redis unreachable)", "stream replay --help"]
    assert all(float(row[1]) > 0 for row in rows) and rows[0][3] == "+0.00"


def test_pipeline_bench_ab_reports_rating_healths_own_cpu_share() -> None:
    """``--ab HEALTH_WINDOW=0 --health-cpu``: both variants rated, each pair's overhead listed, and
    rating health's own share of the worker CPU (scraped from the workers' /metrics) a percentage."""
    out = run_bench("pipeline.py", "--size", "10", "--mode", "throughput", "--rounds", "40", "--workers", "1",
                    "--startup-s", "2", "--repeat", "2", "--ab", "HEALTH_WINDOW=0", "--health-cpu")
    [row] = table_rows(out, "| players/round | A: worker CPU µs/part. |")
    assert row[0] == "10" and number(row[1]) >= 0 and number(row[2]) >= 0
    assert len(row[3].split("(")[1].split(", ")) == 2  # two run pairs (A B, then B A)
    share = row[6].split(" (")[0]
    assert share == "nan%" or 0.0 <= number(share) <= 100.0
    [cpu] = table_rows(out, "| players/round | A: worker CPU µs/round |")  # net of idle, with the A/A control
    assert cpu[0] == "10" and number(cpu[1]) > 0 and number(cpu[2]) > 0
    assert "(50%, 2 pairs)" in cpu[3] and "(50%, 2 pairs)" in cpu[4]  # 2 A/B pairs, 2 A/A pairs: no 95 % yet
    assert len(cpu[5].split(", ")) == 2 and len(cpu[6].split(", ")) == 2


def test_health_ab_bench_times_phase_one_with_health_on_and_off_next_to_an_aa_control() -> None:
    """bench/health_ab.py: per size the two variants, the A/B and A/A intervals, and the share of
    the worker CPU given."""
    out = run_bench("health_ab.py", "--rounds", "130", "--repeat", "2", "--worker-cpu", "2=300,10=700")
    rows = table_rows(out, "| players/round | A: phase one µs/round |")
    assert [row[0] for row in rows] == ["2", "10"]
    for row in rows:
        assert number(row[1]) > 0 and number(row[2]) > 0 and number(row[8]) > 0  # health's own CPU counted
        assert row[5].endswith("(50%, 2 pairs)") and row[6].endswith("(50%, 2 pairs)")
        assert row[9].endswith(f"of {'300' if row[0] == '2' else '700'}")
