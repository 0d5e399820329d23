# roundtrip: the two commands of the README.
#   make run    install everything, then run the workflow on config.yaml
#               (make run CONFIG=my.yaml: check my.yaml, YAML line numbers included, then run it)
#   make test   install everything, then run the test suite
#   make report [CONFIG=my.yaml]   rebuild what results/report.pdf needs (of my.yaml's run)
#   make bench-scale [SIZES="100 1000"]   time the workflow on N generated images (benchmarks/scale.py)
# Installs Debian packages (as root, or prints the apt-get line to run) and a Python venv in .venv.

VENV        ?= .venv
PYTHON      ?= python3
CORES       ?= all
CONFIG      ?=
SIZES       ?=
# Test processes (pytest-xdist): the workflow tests spend much of their time starting Python in
# one process while a core is idle; a test file stays in one process, so its shared runs are
# made once; --no-loadscope-reorder keeps the order tests/conftest.py gives (the longest files
# first), which pytest-xdist would otherwise replace by the number of tests in a file.
# TEST_WORKERS=0 runs the suite in this process.
TEST_WORKERS ?= 2
PY          := $(VENV)/bin/python
SNAKEMAKE   := $(VENV)/bin/snakemake --profile profiles/workstation --cores $(CORES)
# Every target that runs the workflow reads CONFIG when given. Targets go before
# --configfile: Snakemake reads every word after it as one more config file.
ifdef CONFIG
CONFIG_ARGS  := --configfile $(CONFIG)
CHECK_CONFIG := $(VENV)/bin/roundtrip check-config $(CONFIG)
else
CONFIG_ARGS  :=
CHECK_CONFIG := @true
endif
APT_PACKAGES := tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim tesseract-ocr-jpn \
                tesseract-ocr-kor tesseract-ocr-hin poppler-utils fonts-liberation \
                fonts-dejavu-core fonts-noto-core fonts-noto-cjk texlive-xetex \
                fonts-crosextra-caladea fonts-dancingscript fonts-wqy-microhei

.PHONY: run test setup system-deps lint bench bench-scale clean report

run: setup
	$(CHECK_CONFIG)
	$(SNAKEMAKE) $(CONFIG_ARGS)

report: setup
	$(CHECK_CONFIG)
	$(SNAKEMAKE) results/report.pdf $(CONFIG_ARGS)

test: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: setup
	$(VENV)/bin/snakemake --lint $(CONFIG_ARGS)

bench: setup
	$(PY) benchmarks/default_run.py

bench-scale: setup
	$(PY) benchmarks/scale.py $(if $(SIZES),--sizes $(SIZES))

setup: system-deps $(VENV)/.installed

system-deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:" $$missing; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  else \
	    echo "Missing Debian packages. Run as root:"; \
	    echo "  sudo apt-get update && sudo apt-get install -y $$missing"; exit 1; \
	  fi; \
	fi

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[test]"
	touch $@

clean:
	rm -rf results logs .snakemake
