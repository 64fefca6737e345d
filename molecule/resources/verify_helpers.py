"""Shared helpers of the molecule verify tests: run things in a lab node and its serving container."""

import json
import os

PREFIX = os.environ.get("SPARK_LAB_PREFIX", "")
TOKEN = os.environ.get("HF_TOKEN", "")


def node_name(node):
    return PREFIX + node


def serving_container(node):
    # inventories/lab: trtllm_container_name is "trtllm-<node container>"
    return "trtllm-" + node_name(node)


def home(node):
    return "/var/lib/spark-lab/%s/home/spark" % node_name(node)


def inspect(host, node):
    """docker inspect of the node's serving container, read from inside the node (its docker CLI)."""
    out = host.check_output("docker inspect %s", serving_container(node))
    return json.loads(out)[0]


def in_container(host, node, command):
    return host.run("docker exec %s sh -c %s" % (serving_container(node), _quote(command)))


def http_get(host, url):
    """GET from inside the node (where the server's loopback is), returning (status, body)."""
    script = ("import sys, urllib.request, urllib.error\n"
              "try:\n"
              "    r = urllib.request.urlopen(sys.argv[1], timeout=10); print(r.status); print(r.read().decode())\n"
              "except urllib.error.HTTPError as e:\n"
              "    print(e.code); print(e.read().decode())\n")
    out = host.check_output("python3 -c %s %s", script, url)
    status, _newline, body = out.partition("\n")
    return int(status), body


def _quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def testinfra_hosts(*nodes):
    # testinfra does not template the lab inventory's ansible_host, so address the node containers directly.
    return ["docker://" + node_name(n) for n in nodes]


def node_of(host):
    return host.backend.get_hostname()[len(PREFIX):]
