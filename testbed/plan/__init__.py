"""Fabric planning: the Clos fabric a GPU count needs with given hardware, and
a scaled-down scenario of its shape (`testbed plan`). Pure arithmetic: no
Mininet, no switches."""
