"""A pytest plugin every ctest-run pytest file loads (tests/CMakeLists.txt):
a file in which some test skipped, and none failed, exits 77, which ctest
reports as "Skipped" (SKIP_RETURN_CODE) instead of "Passed". A skip says
what the machine lacks; counting it as a pass would hide that the check
never ran. -rs prints each skip's reason."""

SKIPPED = 77


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if exitstatus == 0 and skipped:
        session.exitstatus = SKIPPED
