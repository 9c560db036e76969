#!/usr/bin/env bash
# The GitHub Action's step (action.yml): plan, annotate the pull request, write the SARIF file and put the
# runbook into the job summary. Inputs come as environment variables (MIGRATOR_PATH, MIGRATOR_SARIF, FAIL_ON).
set -uo pipefail
path="${MIGRATOR_PATH:-.}"
sarif="${MIGRATOR_SARIF:-migrator.sarif}"
runbook="$(mktemp)"
args=(plan "$path" --format github -o "sarif=$sarif" -o "markdown=$runbook" --detailed-exitcode)
[ -n "${MIGRATOR_TO:-}" ] && args+=(--to "$MIGRATOR_TO")
migrator "${args[@]}"
code=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -s "$runbook" ]; then
  cat "$runbook" >> "$GITHUB_STEP_SUMMARY"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "exit-code=$code" >> "$GITHUB_OUTPUT"
  echo "sarif=$sarif" >> "$GITHUB_OUTPUT"
fi
rm -f "$runbook"
# exit codes: 0 nothing to do, 2 changes pending, 1 error (see docs/cli.md)
case "${FAIL_ON:-changes}" in
  changes) [ "$code" -eq 0 ] || exit "$code" ;;
  errors) [ "$code" -ne 1 ] || exit 1 ;;
  never) ;;
  *) echo "::error::fail-on must be changes, errors or never"; exit 1 ;;
esac
exit 0
