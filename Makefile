# Every user-facing target first installs what is missing (idempotent).
VENV := .venv
PY := $(VENV)/bin/python
TESTBED := $(VENV)/bin/testbed
S ?= default

.PHONY: setup run scenario reproduce test test-unit diagnose-corpus diagnose-corpus-emulated diagnose-job-corpus bench p4info clean help

help:
	@echo "make run        install what is missing, run the default scenario, print the report path"
	@echo "make test       install what is missing, run the whole test suite"
	@echo "make scenario S=NAME   run scenarios/NAME.yaml"
	@echo "make reproduce  run TiTa's claims experiments (simulator and emulated), one report"
	@echo "make diagnose-corpus  score testbed diagnose on its fault corpus (2 min a seed; TESTBED_DIAGNOSE_SEEDS=7,11,43)"
	@echo "make diagnose-corpus-emulated  the same corpus emulated (root; about 30 min a seed)"
	@echo "make diagnose-job-corpus  score it on training jobs' faults (80 s a seed; TESTBED_DIAGNOSE_SEEDS too)"
	@echo "make bench      run the benchmarks and print their figures"
	@echo "make p4info     regenerate the committed P4Info files of p4src/"
	@echo "make clean      remove what killed runs left behind"

setup:
	@bash scripts/install-deps.sh

# --fit: a fabric this machine cannot hold at the scenario's rates runs at a slower
# clock with every ratio kept (the report states the rates it ran).
run: setup
	@$(TESTBED) run --fit scenarios/default.yaml

scenario: setup
	@$(TESTBED) run --fit scenarios/$(S).yaml

reproduce: setup
	@$(TESTBED) reproduce

# The tests without a real-time fabric run in parallel, one worker per core, each file on one worker
# (a file's tests share loopback addresses and ports); then the fabric tests (marked `alone` by
# tests/conftest.py: tests/integration, tests/bmv2) one at a time, with the machine to themselves.
# Both parts always run; the target fails if either did.
test: setup
	@status=0; \
	$(PY) -m pytest -q -n auto --dist loadfile -m "not alone" --durations=15 || status=$$?; \
	$(PY) -m pytest -q -m alone --durations=25 || status=$$?; \
	exit $$status

test-unit: setup
	@$(PY) -m pytest -q -n auto --dist loadfile tests/unit

diagnose-corpus: setup
	@TESTBED_DIAGNOSE_CORPUS=1 nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider tests/unit/diagnose/test_corpus.py

diagnose-corpus-emulated: setup
	@TESTBED_DIAGNOSE_EMULATED=1 $(PY) -m pytest -q -s -p no:cacheprovider tests/integration/test_diagnose_emulated_corpus.py

diagnose-job-corpus: setup
	@TESTBED_DIAGNOSE_JOB_CORPUS=1 nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider tests/unit/diagnose/test_job_corpus.py

bench: setup
	@$(PY) -m benchmarks

p4info: setup
	@$(PY) -m testbed.p4model.tools.regen_p4info p4src

clean: setup
	@$(TESTBED) clean
