#!/usr/bin/env bash
# The GitHub Action's step (action.yml): plan, annotate the pull request, write the SARIF file and put the
# runbook into the job summary; with MIGRATOR_SINCE, plan from where each root stood at that ref (a bump's companion
# edits); with MIGRATOR_COMMENT=true, keep one pull-request comment with the runbook (updated on every push); with
# MIGRATOR_PUSH=true, commit the companion edits to the pull request's branch. Inputs come as environment variables
# (MIGRATOR_PATH, MIGRATOR_SARIF, MIGRATOR_SINCE, MIGRATOR_COMMENT, MIGRATOR_PUSH, FAIL_ON, GH_TOKEN, PR_NUMBER,
# PR_HEAD_REF, GITHUB_REPOSITORY).
set -uo pipefail
path="${MIGRATOR_PATH:-.}"
sarif="${MIGRATOR_SARIF:-migrator.sarif}"
runbook="$(mktemp)"
comment="$(mktemp)"
since=()
[ -n "${MIGRATOR_SINCE:-}" ] && since=(--since "$MIGRATOR_SINCE")
# a runbook over GitHub's comment limit: the comment keeps the summary and links to the job summary with the whole
export MIGRATOR_RUNBOOK_URL="${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-}/actions/runs/${GITHUB_RUN_ID:-}"
args=(plan "$path" --format github -o "sarif=$sarif" -o "markdown=$runbook" -o "comment=$comment" --detailed-exitcode "${since[@]}")
[ -n "${MIGRATOR_TO:-}" ] && args+=(--to "$MIGRATOR_TO")
migrator "${args[@]}"
code=$?
if [ "${MIGRATOR_PUSH:-false}" = "true" ] && [ "$code" -eq 2 ]; then
  apply=(apply "$path" --write "${since[@]}")
  [ -n "${MIGRATOR_TO:-}" ] && apply+=(--to "$MIGRATOR_TO")
  # only the files migrator wrote: never its own reports (the SARIF file is written into the workspace)
  keep=(-- .)
  top="$(git rev-parse --show-toplevel 2> /dev/null)"
  real="$(python3 -c 'import os, sys; print(os.path.realpath(sys.argv[1]))' "$sarif" 2> /dev/null || echo "$sarif")"
  case "$real" in "$top"/*) keep+=(":(top,exclude)${real#"$top"/}") ;; esac
  if migrator "${apply[@]}" > /dev/null && [ -n "$(git status --porcelain "${keep[@]}")" ]; then
    git config user.name "${GIT_AUTHOR_NAME:-migrator}"
    git config user.email "${GIT_AUTHOR_EMAIL:-migrator@users.noreply.github.com}"
    git add -A "${keep[@]}" && git commit -q -m "Karpenter companion edits (migrator apply${MIGRATOR_SINCE:+ --since $MIGRATOR_SINCE})"
    git push -q origin "HEAD:${PR_HEAD_REF:?PR_HEAD_REF is the pull request branch}" && code=0
    migrator plan "$path" -o "markdown=$runbook" -o "comment=$comment" --quiet "${since[@]}" > /dev/null
  fi
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -s "$runbook" ]; then
  cat "$runbook" >> "$GITHUB_STEP_SUMMARY"
fi
if [ "${MIGRATOR_COMMENT:-false}" = "true" ] && [ -n "${PR_NUMBER:-}" ] && [ -s "$comment" ]; then
  # one comment per pull request, found by its marker and edited in place on every push; the runbook within
  # GitHub's 65,536-character limit (`--format comment`: past it, the summary and a link to this run)
  marker="<!-- migrator-runbook -->"
  body="$(mktemp)"
  { echo "$marker"; cat "$comment"; } > "$body"
  id="$(gh api "repos/$GITHUB_REPOSITORY/issues/$PR_NUMBER/comments" --paginate \
        --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1)"
  if [ -n "$id" ]; then
    gh api -X PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$id" -F "body=@$body" > /dev/null
  else
    gh api -X POST "repos/$GITHUB_REPOSITORY/issues/$PR_NUMBER/comments" -F "body=@$body" > /dev/null
  fi
  rm -f "$body"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "exit-code=$code" >> "$GITHUB_OUTPUT"
  echo "sarif=$sarif" >> "$GITHUB_OUTPUT"
fi
rm -f "$runbook" "$comment"
# exit codes: 0 nothing to do, 2 changes pending (required companion edits missing), 1 error (see docs/cli.md)
case "${FAIL_ON:-changes}" in
  changes) [ "$code" -eq 0 ] || exit "$code" ;;
  errors) [ "$code" -ne 1 ] || exit 1 ;;
  never) ;;
  *) echo "::error::fail-on must be changes, errors or never"; exit 1 ;;
esac
exit 0
