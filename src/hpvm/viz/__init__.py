"""Pictures of a program: the dataflow hierarchy as Graphviz DOT, SVG, PNG or PDF.

``to_dot(root)`` gives DOT text; ``render(root, path)`` writes a picture, with Graphviz when
it is installed and with a built-in layout drawn by matplotlib otherwise. Matplotlib is
imported only when a picture is drawn, so importing ``hpvm`` stays light.
"""

from .dot import to_dot
from .render import graphviz_available, render

__all__ = ["graphviz_available", "render", "to_dot"]
