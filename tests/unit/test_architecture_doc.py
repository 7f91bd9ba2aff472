"""docs/architecture.md reads in short sentences, lists a run's steps, and its picture is the code's.

* No sentence over MAX_WORDS words.  The prose is everything outside ``` fences;
  paragraphs, list items and table cells are separate texts.  A sentence ends at
  '.', '!' or '?' followed by white space and a capital letter, a digit, a
  backtick, a quote, '(' or '*'.  A word is a run of non-space characters.
* "## A run" gives the steps of `testbed run` as a numbered list, 1, 2, 3, ...
* The mermaid block of "## The layers as a picture" draws the layers of the
  "## Layers" block (a node id is the layer's name with '.' written '_').  Each
  arrow is a direct import between two layers in the code, deferred imports
  included, and every import between two layers follows a path of arrows.
"""

from __future__ import annotations

import re

import networkx as nx

from test_import_graph import ARCHITECTURE, TESTBED_ROOT, documented_layers, import_graph, layer_of

MAX_WORDS = 40


def prose_texts(text: str) -> list[str]:
    """The paragraphs, list items and table cells outside code fences, white space folded."""
    kept, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            kept.append("")
            continue
        kept.append("" if fenced else line)
    texts = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[*-]|\d+\.)\s)", "\n".join(kept)):
        parts = [cell for row in block.splitlines() for cell in row.split("|")] \
            if block.lstrip().startswith("|") else [block]
        texts += [" ".join(p.split()) for p in parts if p.strip()]
    return texts


def sentences(text: str) -> list[str]:
    out = []
    for prose in prose_texts(text):
        out += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(*])", prose) if s.strip()]
    return out


def long_sentences(text: str, most: int = MAX_WORDS) -> list[str]:
    return [f"{len(s.split())} words: {s[:100]}..." for s in sentences(text) if len(s.split()) > most]


def section(text: str, heading: str) -> str:
    body = ("\n" + text).split(f"\n## {heading}\n", 1)[1]
    return body.split("\n## ", 1)[0]


def run_steps(text: str) -> list[int]:
    """The numbers of the top-level numbered list items of '## A run', in order."""
    return [int(m.group(1)) for m in re.finditer(r"^(\d+)\. ", section(text, "A run"), re.M)]


def picture_arrows(text: str, layers: list[str]) -> tuple[set[str], set[tuple[str, str]]]:
    """(nodes, arrows) of the mermaid block under '## The layers as a picture', as layer names
    (a node id that is not a layer's name is read with '_' as '.': telemetry_live)."""
    block = section(text, "The layers as a picture").split("```mermaid", 1)[1].split("```", 1)[0]

    def name(node_id: str) -> str:
        return node_id if node_id in layers else node_id.replace("_", ".")

    nodes, arrows = set(), set()
    for line in block.splitlines()[1:]:             # after `flowchart BT`
        line = line.strip()
        if "-->" in line:
            source, targets = (part.strip() for part in line.split("-->"))
            arrows |= {(name(source), name(t.strip())) for t in targets.split("&")}
        elif re.match(r"^\w+(\[.*\])?$", line):
            nodes.add(name(re.match(r"\w+", line).group(0)))
    return nodes, arrows


def layer_imports(order: list[str]) -> set[tuple[str, str]]:
    graph = import_graph(TESTBED_ROOT, "testbed")
    edges = set()
    for a, b in graph.edges():
        la, lb = layer_of(a, "testbed", order), layer_of(b, "testbed", order)
        if la and lb and la != lb:
            edges.add((la, lb))
    return edges


def picture_problems(nodes, arrows, layers, imports) -> list[str]:
    problems = [f"layer {name} is not in the picture" for name in layers if name not in nodes]
    problems += [f"node {name} is not a layer" for name in sorted(nodes - set(layers))]
    problems += [f"arrow {a} --> {b}: {a} does not import {b}" for a, b in sorted(arrows - imports)]
    drawn = nx.DiGraph(list(arrows))
    drawn.add_nodes_from(layers)
    problems += [f"{a} imports {b}, but no path of arrows leads there" for a, b in sorted(imports)
                 if not nx.has_path(drawn, a, b)]
    return problems


def test_no_sentence_is_over_the_limit():
    found = long_sentences(ARCHITECTURE.read_text())
    assert not found, f"sentences over {MAX_WORDS} words in docs/architecture.md:\n  " + "\n  ".join(found)


def test_a_run_is_a_numbered_list_of_steps():
    steps = run_steps(ARCHITECTURE.read_text())
    assert len(steps) >= 5 and steps == list(range(1, len(steps) + 1)), steps


def test_the_picture_is_the_code():
    text = ARCHITECTURE.read_text()
    layers = documented_layers(text)
    nodes, arrows = picture_arrows(text, layers)
    problems = picture_problems(nodes, arrows, layers, layer_imports(layers))
    assert not problems, "docs/architecture.md's picture and the code differ:\n  " + "\n  ".join(problems)


def test_the_checks_find_deliberate_violations():
    long = " ".join(["word"] * 41) + "."
    text = f"# T\n\nShort one. {long} Another.\n\n```\n{long}\n```\n\n| a | {long} |\n\n* {long}\n"
    assert len(long_sentences(text)) == 3     # the paragraph, the table cell, the list item
    assert long_sentences(" ".join(["Word"] * 40) + ". " + " ".join(["Word"] * 40) + ".") == []
    assert len(long_sentences(" ".join(["Word"] * 40) + ". " + " ".join(["word"] * 40) + ".")) == 1

    assert run_steps("## A run\n\n1. a\n2. b\n4. c\n\n## Next\n") == [1, 2, 4]

    layers = ["low", "mid", "top.sub"]
    imports = {("mid", "low"), ("top.sub", "low")}
    drawn = "## The layers as a picture\n\n```mermaid\nflowchart BT\n  low\n  mid\n  top_sub\n" \
            "  mid --> low\n  top_sub --> mid\n```\n"
    nodes, arrows = picture_arrows(drawn, layers)
    assert nodes == {"low", "mid", "top.sub"} and arrows == {("mid", "low"), ("top.sub", "mid")}
    assert picture_problems(nodes, arrows, layers, imports) == [
        "arrow top.sub --> mid: top.sub does not import mid"]
    assert picture_problems(nodes, {("mid", "low")}, layers, imports) == [
        "top.sub imports low, but no path of arrows leads there"]
