"""The `sandbox` options as one policy: shared, then a tool's own over them."""

from __future__ import annotations

import pytest

from codecompanion_py import config
from codecompanion_py.errors import ConfigError
from codecompanion_py.sandbox import SandboxPolicy
from codecompanion_py.sandbox.hints import lacked_network
from codecompanion_py.sandbox.proxy import host_allowed, split_target


def test_a_tools_own_options_add_paths_and_replace_the_network():
    shared = {"network": ["pypi.org"], "writable": ["~/.cache/pip"], "deny_read": ["~/work"]}
    own = {"network": True, "writable": ["/opt/out"], "deny_read": ["~/more"]}
    policy = SandboxPolicy.from_options(shared, own)
    assert policy.network is True
    assert policy.writable == ("~/.cache/pip", "/opt/out")
    assert policy.deny_read[-2:] == ("~/work", "~/more") and "~/.ssh" in policy.deny_read


@pytest.mark.parametrize(
    "table, message",
    [
        ({"network": "yes"}, "network must be false, true or a list of host names"),
        ({"network": ["pypi.org/simple"]}, "list of host names"),
        ({"writable": [3]}, "writable must be a list of paths"),
        ({"mechanism": "docker"}, "mechanism must be one of auto, bubblewrap, landlock"),
        ({"enabled": "no"}, "enabled must be true or false"),
        ({"netwrok": False}, "unknown option 'netwrok'"),
        ("on", "must be a table or a boolean"),
    ],
)
def test_a_wrong_option_says_which_and_why(table, message):
    with pytest.raises(ConfigError, match=message):
        SandboxPolicy.from_options(table)


def test_the_config_reads_the_shared_options_and_denies_the_plugins_own_files():
    loaded = config.load(
        {
            "interactions": {"shared": {"sandbox": {"network": ["PyPI.org."]}}},
            "__editor": {"history_dir": "/data/history", "log_file": "/state/cc.log"},
        }
    )
    assert loaded.tools.sandbox.network == ("pypi.org",)
    assert loaded.tools.sandbox.deny_read[-2:] == ("/data/history", "/state/cc.log")
    assert SandboxPolicy.from_options(False).enabled is False


def test_hosts_match_exactly_or_under_a_wildcard():
    assert host_allowed("pypi.org", ("pypi.org",)) and host_allowed("PyPI.org.", ("pypi.org",))
    assert host_allowed("files.pythonhosted.org", ("*.pythonhosted.org",))
    assert not host_allowed("evilpypi.org", ("pypi.org",)) and not host_allowed("pypi.org.evil.com", ("pypi.org",))
    assert not host_allowed("xpythonhosted.org", ("*.pythonhosted.org",))
    assert split_target("[::1]:8080", 443) == ("::1", 8080) and split_target("host", 443) == ("host", 443)
    assert split_target("host:99999", 443) is None and split_target(":80", 443) is None


@pytest.mark.parametrize(
    "output, lacked",
    [
        ("curl: (6) Could not resolve host: example.com\n", "example.com"),
        ("npm ERR! getaddrinfo ENOTFOUND registry.npmjs.org", "registry.npmjs.org"),
        ("dial tcp: lookup proxy.golang.org: no such host", "proxy.golang.org"),
        ("Failed to establish a new connection: [Errno -3] Temporary failure in name resolution", "the network"),
        ("ConnectionRefusedError: [Errno 111] Connection refused", "the network"),
        ("FAILED tests/test_x.py::test_y - assert 1 == 2", None),
    ],
)
def test_a_failed_commands_output_says_whether_it_lacked_the_network(output, lacked):
    assert lacked_network(output, []) == lacked


def test_a_host_the_proxy_refused_is_the_exact_answer():
    assert lacked_network("anything", ["pypi.org"]) == "pypi.org"
