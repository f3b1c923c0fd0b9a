"""Symmetry declarations, the primitive ABCs, the catalogue and its table."""

from ._compose import RULES as RULES
from ._compose import CompositionWarning as CompositionWarning
from ._compose import CorePath as CorePath
from ._compose import Factorisation as Factorisation
from ._compose import ParameterSymmetry as ParameterSymmetry
from ._compose import Part as Part
from ._compose import Rule as Rule
from ._compose import chain as chain
from ._compose import compose as compose
from ._compose import factorisation as factorisation
from ._compose import meet as meet
from ._compose import part as part
from ._compose import residual as residual
from ._hooks import DimensionRequired as DimensionRequired
from ._hooks import Factored as Factored
from ._hooks import Signature as Signature
from ._hooks import as_function as as_function
from ._hooks import data_call as data_call
from ._hooks import factor_out as factor_out
from ._hooks import keeps_rays as keeps_rays
from ._hooks import maps_rays as maps_rays
from ._hooks import perturb as perturb
from ._hooks import random_call as random_call
from ._hooks import reinitialise as reinitialise
from ._hooks import signature as signature
from ._hooks import transport as transport
from ._primitive import AbstractActivation as AbstractActivation
from ._primitive import AbstractInitialiser as AbstractInitialiser
from ._primitive import AbstractLayer as AbstractLayer
from ._primitive import AbstractLoss as AbstractLoss
from ._primitive import AbstractNormaliser as AbstractNormaliser
from ._primitive import AbstractOperation as AbstractOperation
from ._primitive import AbstractPrimitive as AbstractPrimitive
from ._registry import FAMILIES as FAMILIES
from ._registry import Entry as Entry
from ._registry import register as register
from ._registry import registry as registry
from ._registry import taxonomy as taxonomy
from ._symmetry import FLAVOURS as FLAVOURS
from ._symmetry import GENERATIONS as GENERATIONS
from ._symmetry import Cell as Cell
from ._symmetry import Flavour as Flavour
from ._symmetry import Generation as Generation
from ._symmetry import InconsistentTaxonomyError as InconsistentTaxonomyError
from ._symmetry import Kind as Kind
from ._symmetry import Row as Row
from ._symmetry import Taxonomy as Taxonomy
from ._table import Table as Table
from ._table import TableRow as TableRow
from ._table import table as table


def _make_callable() -> None:
    # `taxdl.taxonomy(obj)` returns a declaration while `taxdl.taxonomy.Taxonomy` etc. stay
    # importable: the package module itself is callable and delegates to `taxonomy`.
    import sys
    import types

    class _CallableModule(types.ModuleType):
        def __call__(self, obj):
            return taxonomy(obj)

    sys.modules[__name__].__class__ = _CallableModule


_make_callable()
del _make_callable
