#!/bin/sh
# Print where the last run's results are.
out="${SENTINEL_OUTPUT:-$(pwd)}"
report=$(ls -t "$out"/reports/run-report-*.json 2>/dev/null | head -n 1)
echo
echo "Results:"
echo "  run report (JSON): ${report:-none written}"
echo "  JUnit (CI):        $out/reports/junit.xml"
echo "  perflogs:          $out/reports/perflogs/"
echo "  results database:  $out/var/results.db (reframe --list-stored-sessions)"
