"""Pure topology description: leaf-spine, k-ary fat-tree, dual-homed hosts,
parallel links, the addressing plan and equal-cost path sets.

Plain data over networkx; no Mininet, no processes, no scenario import.
"""

from testbed.topo.build import build_topology
from testbed.topo.model import Counts, Link, LocalLink, Node, Path, Port, Topology
from testbed.topo.spec import FatTreeSpec, LeafSpineSpec, TopoError, TopoSpec, spec_from_dict

__all__ = [
    "build_topology", "Counts", "FatTreeSpec", "LeafSpineSpec", "Link", "LocalLink", "Node", "Path",
    "Port", "TopoError", "TopoSpec", "Topology", "spec_from_dict",
]
