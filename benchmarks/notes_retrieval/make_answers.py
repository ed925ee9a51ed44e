"""Per-chunk answers for the example vault from a hand-curated list of its entities and relations.

    .venv/bin/python benchmarks/notes_retrieval/make_answers.py           # writes answers.json
    .venv/bin/python benchmarks/notes_retrieval/make_answers.py --check   # exit 1 if stale

The retrieval benchmark measures retrieval, not the extraction model, so it runs on a graph whose
entities and relations we wrote ourselves: ``ENTITIES`` (name, class, other names the notes use)
and ``RELATIONS`` below, for ``ontology/notes.json``. For every chunk of ``corpus/notes`` an answer
lists the entities the chunk mentions (by any of their names, with the evidence matcher the
validator uses) and the curated relations whose two ends it mentions. The file is in the replay
provider's format, so the whole pipeline (validation, evidence, load, embeddings, communities)
runs on it exactly as on a model's answers: ``--provider replay --replay-file answers.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graphrag_got.ingest.chunking import read_corpus  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.common.text_match import ChunkText  # noqa: E402

VAULT = ROOT / "corpus" / "notes"
OUT = Path(__file__).resolve().parent / "answers.json"

# (name, class, other names the notes use for it)
ENTITIES: list[tuple[str, str, tuple[str, ...]]] = [
    ("LVM", "Tool", ("Logical Volume Manager",)), ("lvextend", "Command", ()), ("resize2fs", "Command", ()),
    ("xfs_growfs", "Command", ()), ("thin pool", "Concept", ("thin provisioning",)),
    ("snapshot", "Concept", ("instantánea", "snapshots", "instantáneas")), ("copy-on-write", "Concept", ()),
    ("mdadm", "Tool", ()), ("RAID 1", "Concept", ("espejo", "mirror")), ("RAID", "Concept", ()),
    ("Btrfs", "Tool", ()), ("ext4", "Tool", ()), ("XFS", "Tool", ()), ("/etc/fstab", "FilePath", ("fstab",)),
    ("HAProxy", "Tool", ()), ("Keepalived", "Tool", ()), ("VRRP", "Protocol", ()),
    ("virtual IP", "Concept", ("IP virtual", "VIP")), ("Pacemaker", "Tool", ()), ("Corosync", "Tool", ()),
    ("quorum", "Concept", ("quórum",)), ("split-brain", "Concept", ()), ("fencing", "Concept", ("STONITH",)),
    ("BorgBackup", "Tool", ("Borg",)), ("restic", "Tool", ()), ("3-2-1", "Concept", ("regla 3-2-1",)),
    ("ransomware", "Concept", ()), ("Docker", "Tool", ("dockerd",)), ("Podman", "Tool", ()),
    ("rootless", "Concept", ()), ("Kubernetes", "Tool", ()), ("kubelet", "Service", ()), ("Pod", "Concept", ()),
    ("readiness probe", "Concept", ("readiness",)), ("liveness probe", "Concept", ("liveness",)),
    ("BIND", "Tool", ("named",)), ("Unbound", "Tool", ()), ("DNS", "Protocol", ()), ("DNSSEC", "Protocol", ()),
    ("Grafana", "Tool", ()), ("Prometheus", "Tool", ()), ("Alertmanager", "Tool", ()),
    ("node_exporter", "Tool", ("node exporter",)), ("/etc/prometheus/prometheus.yml", "FilePath", ("prometheus.yml",)),
    ("Zabbix", "Tool", ()), ("Zabbix agent 2", "Service", ("agente 2", "zabbix_agent2")),
    ("Zabbix proxy", "Tool", ("proxy de Zabbix",)), ("SNMP", "Protocol", ("SNMPv3",)), ("Nagios", "Tool", ("Nagios Core",)),
    ("NRPE", "Tool", ()), ("certbot", "Tool", ()), ("Let's Encrypt", "Tool", ()), ("ACME", "Protocol", ()),
    ("TLS", "Protocol", ()), ("X.509", "Concept", ("certificado X.509",)), ("OpenSSL", "Tool", ("openssl",)),
    ("journalctl", "Command", ()), ("journal", "Concept", ()), ("systemd", "Tool", ()),
    ("systemd timer", "Concept", ("timer unit", "timers")), ("cron", "Tool", ()), ("sysctl", "Command", ()),
    ("/etc/sysctl.d/", "FilePath", ()), ("nginx", "Tool", ()), ("Apache", "Tool", ("Apache httpd", "httpd")),
    ("VirtualHost", "Concept", ()), ("reverse proxy", "Concept", ("proxy inverso",)), ("HTTP", "Protocol", ()),
]

RELATIONS: list[tuple[str, str, str]] = [
    ("lvextend", "PART_OF", "LVM"), ("LVM", "USES", "thin pool"), ("LVM", "USES", "snapshot"),
    ("snapshot", "PART_OF", "copy-on-write"), ("mdadm", "IMPLEMENTS", "RAID 1"), ("mdadm", "IMPLEMENTS", "RAID"),
    ("Btrfs", "USES", "copy-on-write"), ("Btrfs", "USES", "snapshot"), ("ext4", "ALTERNATIVE_TO", "XFS"),
    ("resize2fs", "MANAGES", "ext4"), ("xfs_growfs", "MANAGES", "XFS"), ("/etc/fstab", "CONFIGURES", "systemd"),
    ("Keepalived", "IMPLEMENTS", "VRRP"), ("Keepalived", "USES", "virtual IP"), ("Pacemaker", "USES", "Corosync"),
    ("Corosync", "USES", "quorum"), ("Pacemaker", "USES", "fencing"), ("quorum", "PART_OF", "split-brain"),
    ("HAProxy", "USES", "HTTP"), ("HAProxy", "USES", "nginx"), ("restic", "ALTERNATIVE_TO", "BorgBackup"),
    ("Podman", "ALTERNATIVE_TO", "Docker"), ("Podman", "USES", "rootless"), ("kubelet", "PART_OF", "Kubernetes"),
    ("kubelet", "USES", "readiness probe"), ("kubelet", "USES", "liveness probe"), ("Kubernetes", "MANAGES", "Docker"),
    ("Unbound", "USES", "BIND"), ("Unbound", "IMPLEMENTS", "DNS"), ("BIND", "IMPLEMENTS", "DNS"),
    ("Unbound", "IMPLEMENTS", "DNSSEC"), ("Grafana", "USES", "Prometheus"), ("Grafana", "USES", "Zabbix"),
    ("Prometheus", "USES", "Alertmanager"), ("Prometheus", "USES", "node_exporter"),
    ("/etc/prometheus/prometheus.yml", "CONFIGURES", "Prometheus"), ("Zabbix agent 2", "PART_OF", "Zabbix"),
    ("Zabbix proxy", "PART_OF", "Zabbix"), ("Zabbix", "USES", "SNMP"), ("Nagios", "USES", "NRPE"),
    ("Nagios", "ALTERNATIVE_TO", "Zabbix"), ("certbot", "USES", "ACME"), ("certbot", "USES", "Let's Encrypt"),
    ("nginx", "USES", "TLS"), ("nginx", "USES", "certbot"), ("OpenSSL", "USES", "X.509"), ("OpenSSL", "IMPLEMENTS", "TLS"),
    ("journalctl", "PART_OF", "systemd"), ("systemd", "USES", "journal"), ("systemd timer", "PART_OF", "systemd"),
    ("systemd", "ALTERNATIVE_TO", "cron"), ("sysctl", "CONFIGURES", "systemd"),
    ("nginx", "ALTERNATIVE_TO", "Apache"), ("Apache", "USES", "VirtualHost"), ("nginx", "USES", "reverse proxy"),
    ("Kubernetes", "USES", "Pod"),
]


def answers() -> dict:
    settings = Settings()
    docs = read_corpus(VAULT, kind=settings.chunking.chunker, min_chars=settings.chunking.min_chars,
                       max_chars=settings.chunking.max_chars)
    by_name = {name: (cls, (name, *aliases)) for name, cls, aliases in ENTITIES}
    for s, _, o in RELATIONS:
        assert s in by_name and o in by_name, (s, o)
    responses = []
    for d in docs:
        for ch in d.chunks:
            text = ChunkText(ch.text)
            found: dict[str, str] = {}  # canonical name -> the form this chunk uses
            for name, (cls, forms) in by_name.items():
                used = next((f for f in forms if text.mentions(f, 0.95)), None)
                if used is not None:
                    found[name] = used
            entities = [{"type": by_name[n][0], "name": used} for n, used in found.items()]
            relations = [{"relation": r, "subject": found[s], "subject_type": by_name[s][0], "object": found[o],
                          "object_type": by_name[o][0]} for s, r, o in RELATIONS if s in found and o in found]
            answer = {"entities": entities[:12], "relations": relations[:12]}
            responses.append({"chunk_id": ch.id, "chunk_hash": ch.hash,
                              "responses": [json.dumps(answer, ensure_ascii=False)]})
    return {"format": "graphrag_got.replay/1", "model": "hand-curated (benchmarks/notes_retrieval/make_answers.py)",
            "responses": responses}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    text = json.dumps(answers(), ensure_ascii=False, indent=1) + "\n"
    if args.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale; run {Path(__file__).relative_to(ROOT)}")
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}: {len(json.loads(text)['responses'])} chunk answers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
