"""scripts/upstream-coverage: its Ginkgo parsing on small fixture sources, and the traceability map
fixtures/upstream-tests.yaml checked against the catalogue (format, statuses, requirement ids).

The script itself runs against upstream snapshots (a developer tool); here only its functions run,
on strings."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "upstream-coverage"


def _load() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("upstream_coverage", str(SCRIPT))
    spec = importlib.util.spec_from_loader("upstream_coverage", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["upstream_coverage"] = mod
    loader.exec_module(mod)
    return mod


uc = _load()

QUALIFIED = """
package e2e

var _ = ginkgo.Describe("leaderWorkerSet e2e tests", func() {
	ginkgo.BeforeEach(func() { ns = "x" })
	// ginkgo.It("a commented-out spec", func() {})
	/* ginkgo.It("a block-commented spec", func() {}) */
	ginkgo.It("Can deploy lws with 'replicas' (and size)", func() {
		s := "ginkgo.It(\\"not a spec\\", func() {})"
		_ = s
	})
	ginkgo.Context("when scaling", func() {
		ginkgo.It("scales " +
			"up", func() {})
	})
	ginkgo.DescribeTable("leaderWorkerSet creating or updating",
		func(tc *testCase) {},
		ginkgo.Entry("scale up number of groups", &testCase{}),
		ginkgo.Entry(`raw "name"`, &testCase{}),
	)
	ginkgo.It("after the table", func() {})
})
"""

DOT_IMPORTED = """
var _ = Describe("DisaggregatedSet E2E Tests", Ordered, func() {
	Context("Rolling Update Step Tracking", func() {
		for _, tc := range testCases {
			It(fmt.Sprintf("should track rollout steps for %s", tc.Name), func() {})
		}
		It(name, func() {})
	})
	g.It("a method of something else", func() {})
	Expect(x).To(Succeed())
})
"""


def test_qualified_specs_are_named_by_their_containers() -> None:
    names = [c.name for c in uc.parse_specs(QUALIFIED, "test/e2e/e2e_test.go")]
    assert names == [
        "leaderWorkerSet e2e tests / Can deploy lws with 'replicas' (and size)",
        "leaderWorkerSet e2e tests / when scaling / scales up",
        "leaderWorkerSet e2e tests / leaderWorkerSet creating or updating / scale up number of groups",
        'leaderWorkerSet e2e tests / leaderWorkerSet creating or updating / raw "name"',
        "leaderWorkerSet e2e tests / after the table",
    ]


def test_dot_imported_specs_keep_a_format_string_and_name_a_variable() -> None:
    cases = uc.parse_specs(DOT_IMPORTED, "test/e2e/disaggregatedset/e2e_test.go")
    assert [c.name for c in cases] == [
        "DisaggregatedSet E2E Tests / Rolling Update Step Tracking / should track rollout steps for %s",
        "DisaggregatedSet E2E Tests / Rolling Update Step Tracking / <name>",
    ]
    assert cases[0].line == 5 and cases[0].file.endswith("e2e_test.go")


def test_kueue_keeps_every_spec_of_an_lws_file_and_only_lws_specs_elsewhere() -> None:
    other = """
var _ = ginkgo.Describe("MultiKueue", func() {
	ginkgo.It("Should run a Job", func() { job := testingjob.MakeJob("j", ns) })
	ginkgo.It("Should sync a set", func() { lws := leaderworkersettesting.MakeLeaderWorkerSet("l", ns) })
})
"""
    lws_file = 'var _ = ginkgo.Describe("LeaderWorkerSet Webhook", func() { ginkgo.It("rejects", func() {}) })'
    files = {
        "test/e2e/multikueue/e2e_test.go": other,
        "test/integration/webhook/jobs/leaderworkerset_webhook_test.go": lws_file,
        "test/e2e/suite_helpers.go": lws_file,  # not a _test.go file
        "pkg/controller/leaderworkerset_test.go": lws_file,  # not under test/e2e or test/integration
    }
    names = [(c.file, c.name) for c in uc.select_cases("kueue", files)]
    assert names == [
        ("test/e2e/multikueue/e2e_test.go", "MultiKueue / Should sync a set"),
        ("test/integration/webhook/jobs/leaderworkerset_webhook_test.go", "LeaderWorkerSet Webhook / rejects"),
    ]
    assert len(uc.select_cases("lws", {"test/e2e/multikueue/e2e_test.go": other})) == 2


def _entry(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "repo": "lws",
        "file": "test/e2e/e2e_test.go",
        "test": "A / b",
        "refs": ["main"],
        "status": "covered",
        "requirements": ["LWS-NAME-001"],
    }
    base.update(kw)
    return base


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        (_entry(status="maybe"), "is not one of"),
        (_entry(requirements=[]), "covered needs requirements"),
        (_entry(status="partly"), "partly needs a reason"),
        (_entry(status="none", reason="internals"), "none names no requirements"),
        (_entry(requirements=["LWS-NOPE-001"]), "unknown requirement ids ['LWS-NOPE-001']"),
        (_entry(refs=["v9.9.9"]), "refs must name refs listed under refs.lws"),
        (_entry(repo="jobset"), "needs repo (lws or kueue)"),
    ],
)
def test_map_format_errors(entry: dict[str, object], error: str) -> None:
    data = {"refs": {"lws": {"main": "abc"}}, "cases": [entry]}
    errors = uc.check_map(data, {"LWS-NAME-001"})
    assert len(errors) == 1 and error in errors[0], errors


def test_a_case_mapped_twice_is_an_error() -> None:
    data = {"refs": {"lws": {"main": "abc"}}, "cases": [_entry(), _entry()]}
    assert [e for e in uc.check_map(data, {"LWS-NAME-001"}) if "mapped twice" in e]


def test_new_upstream_cases_show_as_unmapped_and_vanished_ones_as_missing() -> None:
    data = {
        "refs": {"lws": {"main": "abc"}},
        "cases": [
            _entry(test="A / kept"),
            _entry(test="A / renamed upstream"),
            _entry(test="A / only on a release", refs=["v0.10.0"]),
            _entry(test="A / out of scope", status="none", requirements=[], reason="Volcano"),
        ],
    }
    cases = [uc.Case("test/e2e/e2e_test.go", n, 1, "") for n in ("A / kept", "A / brand new", "A / out of scope")]
    result = uc.compare("lws", "main", "abc123", cases, data)
    assert [c.name for c in result.unmapped] == ["A / brand new"]
    assert [e["test"] for e in result.missing] == ["A / renamed upstream"]
    table = uc.table([result])
    # 3 cases: 1 covered, 1 none, 1 unmapped -> covered 1 of the 2 in scope
    assert "| lws@main (abc123) | test/e2e | 3 | 1 | 0 | 0 | 1 | 1 | 50% | 50% |" in table, table


def test_the_map_is_well_formed_against_the_catalogue() -> None:
    data = uc.load_map(uc.MAP)
    assert uc.check_map(data, uc.catalogue_ids()) == []
    assert {e["repo"] for e in data["cases"]} == {"lws", "kueue"}
    # every upstream LWS test tree the map promises is in it
    files = {e["file"] for e in data["cases"]}
    for prefix in (
        "test/e2e/disaggregatedset/",
        "test/integration/controllers/",
        "test/integration/webhooks/",
        "test/e2e/singlecluster/",
        "test/e2e/tas/",
    ):
        assert any(f.startswith(prefix) for f in files), prefix
