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
since=()
[ -n "${MIGRATOR_SINCE:-}" ] && since=(--since "$MIGRATOR_SINCE")
args=(plan "$path" --format github -o "sarif=$sarif" -o "markdown=$runbook" --detailed-exitcode "${since[@]}")
[ -n "${MIGRATOR_TO:-}" ] && args+=(--to "$MIGRATOR_TO")
migrator "${args[@]}"
code=$?
if [ "${MIGRATOR_PUSH:-false}" = "true" ] && [ "$code" -eq 2 ]; then
  apply=(apply "$path" --write "${since[@]}")
  [ -n "${MIGRATOR_TO:-}" ] && apply+=(--to "$MIGRATOR_TO")
  if migrator "${apply[@]}" > /dev/null && [ -n "$(git status --porcelain)" ]; then
    git config user.name "${GIT_AUTHOR_NAME:-migrator}"
    git config user.email "${GIT_AUTHOR_EMAIL:-migrator@users.noreply.github.com}"
    git add -A && git commit -q -m "Karpenter companion edits (migrator apply${MIGRATOR_SINCE:+ --since $MIGRATOR_SINCE})"
    git push -q origin "HEAD:${PR_HEAD_REF:?PR_HEAD_REF is the pull request branch}" && code=0
    migrator plan "$path" -o "markdown=$runbook" --quiet "${since[@]}" > /dev/null
  fi
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -s "$runbook" ]; then
  cat "$runbook" >> "$GITHUB_STEP_SUMMARY"
fi
if [ "${MIGRATOR_COMMENT:-false}" = "true" ] && [ -n "${PR_NUMBER:-}" ] && [ -s "$runbook" ]; then
  # one comment per pull request, found by its marker and edited in place on every push
  marker="<!-- migrator-runbook -->"
  body="$(mktemp)"
  { echo "$marker"; cat "$runbook"; } > "$body"
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
rm -f "$runbook"
# exit codes: 0 nothing to do, 2 changes pending (required companion edits missing), 1 error (see docs/cli.md)
case "${FAIL_ON:-changes}" in
  changes) [ "$code" -eq 0 ] || exit "$code" ;;
  errors) [ "$code" -ne 1 ] || exit 1 ;;
  never) ;;
  *) echo "::error::fail-on must be changes, errors or never"; exit 1 ;;
esac
exit 0
