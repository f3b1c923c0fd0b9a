"""Group families acting on the last axis of arrays (DESIGN §1).

Sampling (Haar where compact), membership, the subgroup hierarchy and representations.
"""

from ._affine import AbstractTranslationExtension as AbstractTranslationExtension
from ._affine import Affine as Affine
from ._affine import BlockScaleShift as BlockScaleShift
from ._affine import Diagonal as Diagonal
from ._affine import DiagonalAffine as DiagonalAffine
from ._affine import Euclidean as Euclidean
from ._affine import ScaleTranslation as ScaleTranslation
from ._affine import Translations as Translations
from ._base import AbstractGroup as AbstractGroup
from ._base import Element as Element
from ._base import linear_element as linear_element
from ._complex import SU2 as SU2
from ._complex import PermutationPhase as PermutationPhase
from ._complex import Unitary as Unitary
from ._complex import pauli as pauli
from ._complex import su2_adjoint as su2_adjoint
from ._hierarchy import commuting as commuting
from ._hierarchy import moves_origin as moves_origin
from ._hierarchy import normalises as normalises
from ._hierarchy import immediate_supergroups as immediate_supergroups
from ._hierarchy import is_subgroup as is_subgroup
from ._hierarchy import represent as represent
from ._hierarchy import same_group as same_group
from ._hierarchy import scalar_subgroup as scalar_subgroup
from ._hierarchy import scalings_times as scalings_times
from ._hierarchy import shift_extensions as shift_extensions
from ._hierarchy import signs_times as signs_times
from ._real import BlockPermutation as BlockPermutation
from ._real import ConformalLinear as ConformalLinear
from ._real import EvenSignedPermutation as EvenSignedPermutation
from ._real import GeneralLinear as GeneralLinear
from ._real import Orthogonal as Orthogonal
from ._real import OrthogonalComplement as OrthogonalComplement
from ._real import Permutation as Permutation
from ._real import PointReflection as PointReflection
from ._real import ScaleShift as ScaleShift
from ._real import Scaling as Scaling
from ._real import SignFlips as SignFlips
from ._real import SignedPermutation as SignedPermutation
from ._real import SpecialOrthogonal as SpecialOrthogonal
from ._real import Translation as Translation
from ._real import Trivial as Trivial
from ._real import ones_complement_basis as ones_complement_basis
from ._structured import BlockDiagonal as BlockDiagonal
from ._structured import ConeGroup as ConeGroup
from ._structured import Dihedral as Dihedral
from ._structured import Lorentz as Lorentz
from ._structured import Product as Product
from ._structured import Simplex as Simplex
from ._structured import minkowski_metric as minkowski_metric
from ._structured import simplex_vertices as simplex_vertices
from ._extra import MonomialUnitary as MonomialUnitary
from ._extra import Phase as Phase
from ._extra import Monomial as Monomial
from ._extra import MonomialAffine as MonomialAffine
from ._extra import PositiveMonomial as PositiveMonomial
from ._extra import RotatedConeGroup as RotatedConeGroup
from ._extra import rotated_cone_basis as rotated_cone_basis

# Short aliases matching the paper's notation.
I = Trivial  # noqa: E741
S = Permutation
D = EvenSignedPermutation
B = SignedPermutation
O = Orthogonal  # noqa: E741
SO = SpecialOrthogonal
GL = GeneralLinear
U = Unitary
