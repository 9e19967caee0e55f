"""Every suite runs under the harness's pytest plugin (cluster fixture, requirement claims,
verdicts, reports). It is loaded here and by `lwsc run` (`-p lws_conformance.plugin`), never by an
entry point: other pytest sessions of the environment do not import it (kubernetes, allure and
chaostoolkit with it)."""

from lws_conformance.resources import plugin_args  # not the kit: it imports the plugin before pytest can

pytest_plugins = plugin_args()[1:]
