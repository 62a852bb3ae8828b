"""Parses an OpenMetrics text exposition (a /metrics scrape) with the
official Prometheus Python client's strict parser and prints its samples as
JSON: [{"name", "labels", "value"}], or fails on any malformed line.

Usage: prom_parse.py FILE
"""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

with open(sys.argv[1]) as f:
    text = f.read()
samples = []
for family in text_string_to_metric_families(text):
    for s in family.samples:
        samples.append({"family": family.name, "type": family.type,
                        "name": s.name, "labels": s.labels, "value": s.value})
print(json.dumps(samples))
