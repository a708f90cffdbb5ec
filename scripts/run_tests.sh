#!/usr/bin/env bash
# make test: the whole suite in stages, each timed (a table of the stages' wall times ends the run).
#
# Two tiers: `make test` runs every test not marked `long` (TEST_TIER=quick, about 12 minutes on 2 cores), `make
# test-long` the whole sessions and drills over real graphs that take a minute or more each (TEST_TIER=long: the
# whole-graph suites on the emulated rigs, calibration sessions, agent episodes); CI runs both, one after the other.
#
# The stages overlap: the in-process tests (pytest-xdist on every core) run in the background at nice 19 from the
# start, taking the CPU the graphs leave idle (none of them asserts a time); in front of them the graph suites:
# test/hardware one test at a time (franky-sim's 1 kHz loop and the X5 SDK's real-time threads each need a core;
# two such tests at once starved franky-sim into libfranka timeouts), test/launch, then test/ros on two workers (its
# conftest keeps each file's tests on one worker; every graph has a ROS domain of its own). Measured on 2 cores from
# a fresh clone, setup included: 13-13.5 min (debootstrap roots of Debian 12 and 13); one stage after the other
# (TEST_OVERLAP=0) took about twice as long. The colcon builds that stages share take a lock
# (process_graph.build_interfaces).
#
# Environment knobs:
#   TEST_TIER     quick (default), long or all
#   PYTEST_ARGS   more pytest arguments for every stage (e.g. "-k foo"; a stage selecting nothing passes)
#   TEST_JOBS     workers for the in-process tests (default auto; 0 runs them in one process)
#   TEST_OVERLAP  0: one stage after the other, the in-process tests first (default 1: overlapped, above)
#   ROS_JOBS      workers for test/ros (default 2; 0 with TEST_OVERLAP=0: in this process, one test at a time)
#   UNIT_NICE     the in-process tests' niceness beside the graph suites (default 19)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY="${PY:-.venv/bin/python}"
case "${TEST_TIER:-quick}" in
  quick) EXTRA=(-m "not long") ;;
  long) EXTRA=(-m long) ;;
  all) EXTRA=() ;;
  *) echo "TEST_TIER must be quick, long or all, not '${TEST_TIER}'" >&2; exit 2 ;;
esac
eval "EXTRA+=(${PYTEST_ARGS:-})"  # quoted as on a command line: PYTEST_ARGS="-k 'a and b'"
EXTRA+=(--durations=10 --durations-min=5)  # each stage names its slowest tests: where the time goes
LOGS=out/test-logs
mkdir -p "$LOGS"
GRAPH_SUITES=(test/hardware test/launch test/ros)

failed=()
times=()

# Run one pytest stage; exit code 5 ("no test selected", a -k matching nothing here) counts as passed.
stage() {
  local name="$1"
  shift
  local start=$SECONDS status=0
  "$@" || status=$?
  ((status == 5)) && status=0
  times+=("$(printf '%-34s %5d s  %s' "$name" $((SECONDS - start)) "$([[ $status == 0 ]] && echo ok || echo "exit $status")")")
  ((status == 0)) || failed+=("$name")
}

ignores=()
for suite in "${GRAPH_SUITES[@]}"; do ignores+=(--ignore="$suite"); done
unit_cmd=("$PY" -m pytest -q -n "${TEST_JOBS:-auto}" --dist loadgroup test "${ignores[@]}" "${EXTRA[@]}")
overlap="${TEST_OVERLAP:-1}"
ros_jobs="${ROS_JOBS:-$([[ $overlap == 1 ]] && echo 2 || echo 0)}"
if [[ $overlap == 1 ]]; then
  echo "${unit_cmd[*]} (nice ${UNIT_NICE:-19}, beside the graph suites; output in $LOGS/unit.log)"
  unit_start=$SECONDS
  rm -f "$LOGS/unit.end"
  # The subshell notes when the tests ended (bash's SECONDS carries into it): the runner waits for them only later.
  (
    nice -n "${UNIT_NICE:-19}" "${unit_cmd[@]}" >"$LOGS/unit.log" 2>&1
    status=$?
    echo "$SECONDS" >"$LOGS/unit.end"
    exit "$status"
  ) &
  unit_pid=$!
else
  echo "${unit_cmd[*]}"
  stage "in-process tests" "${unit_cmd[@]}"
fi

for suite in test/hardware test/launch; do
  echo "$PY -m pytest -q $suite ${EXTRA[*]}"
  stage "$suite" "$PY" -m pytest -q -n 0 "$suite" "${EXTRA[@]}"
done
echo "$PY -m pytest -q -n $ros_jobs --dist loadgroup test/ros ${EXTRA[*]}"
stage test/ros "$PY" -m pytest -q -n "$ros_jobs" --dist loadgroup test/ros "${EXTRA[@]}"

if [[ $overlap == 1 ]]; then
  unit_status=0
  wait "$unit_pid" || unit_status=$?
  ((unit_status == 5)) && unit_status=0
  echo "=== in-process tests ($LOGS/unit.log)"
  cat "$LOGS/unit.log"
  unit_end=$(cat "$LOGS/unit.end" 2>/dev/null || echo "$SECONDS")
  times+=("$(printf '%-34s %5d s  %s' "in-process tests (beside them)" $((unit_end - unit_start)) \
    "$([[ $unit_status == 0 ]] && echo ok || echo "exit $unit_status")")")
  ((unit_status == 0)) || failed+=("in-process tests")
fi

echo "=== make test stages (wall time)"
printf '  %s\n' "${times[@]}"
if ((${#failed[@]})); then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
