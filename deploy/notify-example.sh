#!/bin/sh
# An example `notify.command` for farm.yaml (deploy/README.md, "The night end to end"): `farm sweep` runs it
# after every sweep with the payload JSON on stdin and in the file $FARM_NOTIFY_PAYLOAD_FILE (format 1, fields in
# farm/report/notify_payload.py). It prints the night in one line, which the sweep logs, and mails it with the
# payload attached when NOTIFY_MAIL_TO is set (in /etc/agent-farm/sweep.env) and `mail` is installed (under the
# service's NoNewPrivileges=yes a setgid mail drop such as Postfix's postdrop is refused: use one that speaks SMTP,
# e.g. msmtp's `mail`).
# Exit non-zero on failure: the sweep logs one warning and keeps its own exit status either way.
set -eu
line=$(python3 - "$FARM_NOTIFY_PAYLOAD_FILE" <<'PY'
import json, sys

with open(sys.argv[1], encoding="utf-8") as f:
    p = json.load(f)
head = p["headline"]["text"] if p["headline"] else (p["error"] or "no headline")
reg = p["regressions"]
regressed = (f"{reg['count']} regressed since {reg['compared_with']}" + (f" ({', '.join(reg['listed'])})"
             if reg["listed"] else "")) if reg["count"] is not None else "not compared"
lost = ", ".join(h["server"] for h in p["lost_hosts"]) or "none"
print(f"{p['label'] or 'sweep'} {p['run'] or '(not started)'}: exit {p['exit_status']} ({p['exit_meaning']}) · "
      f"{head} · {regressed} · lost hosts: {lost}")
PY
)
echo "$line"
if [ -n "${NOTIFY_MAIL_TO:-}" ] && command -v mail >/dev/null 2>&1; then
    mail -s "agent-farm: $line" "$NOTIFY_MAIL_TO" <"$FARM_NOTIFY_PAYLOAD_FILE"
fi
