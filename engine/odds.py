"""Exact probability distributions over integers.

Probabilities stay exact (integer weights over a common denominator, exposed as
``Fraction``) until the JSON edge, where ``to_json`` turns them into floats.
A penetrating die follows the cap the rules give it (H-CS-PEN-CAP): a chain that
reaches the cap stops there, and its value counts as ``resolve`` counts it. Mass that a
distribution leaves out is carried as ``truncated_mass`` instead of being dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any

from .dice import MAX_PENETRATION_FOLLOW_UPS


@dataclass(frozen=True)
class Dist:
    """A finite distribution: ``weights[v] / total`` is P(value = v).

    ``truncated`` is the weight (over the same ``total``) of outcomes cut off by a
    cap; those outcomes are *not* in ``weights``.
    """

    weights: Mapping[int, int]
    total: int
    truncated: int = 0
    _sorted: tuple[tuple[int, int], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sorted", tuple(sorted(
            (v, w) for v, w in self.weights.items() if w)))

    # -- constructors ---------------------------------------------------------------
    @staticmethod
    def constant(value: int) -> Dist:
        return Dist({value: 1}, 1)

    @staticmethod
    def die(sides: int) -> Dist:
        """A fair d``sides``."""
        return Dist(dict.fromkeys(range(1, sides + 1), 1), sides)

    @staticmethod
    def from_probabilities(probs: Mapping[int, Fraction]) -> Dist:
        """From exact probabilities that sum to at most 1 (the rest is truncated mass)."""
        denom = 1
        for p in probs.values():
            denom = denom * p.denominator // _gcd(denom, p.denominator)
        weights = {v: int(p * denom) for v, p in probs.items()}
        rest = denom - sum(weights.values())
        return Dist(weights, denom, rest)

    @staticmethod
    def penetrating_die(sides: int, cap: int = MAX_PENETRATION_FOLLOW_UPS) -> Dist:
        """One penetrating d``sides``: a maximum adds another die counting value − 1.

        A chain stops after ``cap`` follow-ups whatever the last die shows (the house
        default's cap, as ``DiceSource.roll_penetrating`` rolls it): that chain counts
        ``sides + cap × (sides − 1)``. Nothing is truncated. (``penetrating_dice`` of
        one die; the tests check it against every chain of faces.)
        """
        return Dist.penetrating_dice(1, sides, cap)

    @staticmethod
    def penetrating_dice(count: int, sides: int, cap: int = MAX_PENETRATION_FOLLOW_UPS
                         ) -> Dist:
        """The sum of ``count`` penetrating d``sides``, each as ``penetrating_die``, the
        same distribution as ``penetrating_die(sides, cap).repeat(count)`` but counted
        directly instead of by convolving hundreds of values with weights of a thousand
        bits (5 d6 with the cap of 100 took 1.4 s that way, and the daemon answers
        nothing meanwhile).

        A chain that stops after ``k`` follow-ups (``k`` ≤ ``cap``) on a face ``f`` below
        the maximum shows ``k × (sides − 1) + f`` with weight ``sides ** (cap − k)``; the
        chain that reaches the cap shows ``sides + cap × (sides − 1)`` with weight 1. So
        with ``j`` dice at the cap and the other ``m`` stopping after ``K`` follow-ups in
        all on faces summing to ``F``, the value is ``j × capped + (sides − 1) × K + F``
        and the weight ``comb(count, j) × ways(K) × ways(F) × sides ** (m × cap − K)``,
        where ``ways`` counts the ways the ``m`` dice share ``K`` (each at most ``cap``)
        and ``F`` (each face from 1 to ``sides − 1``): small numbers.
        """
        if sides == 1:
            # Every chain of a d1 reaches the cap, each die adding 0: each die shows 1.
            return Dist({count: 1}, 1)
        step = sides - 1
        capped = sides + cap * step
        weights: dict[int, int] = {}
        for at_cap in range(count + 1):
            rest = count - at_cap
            follow_ups = _ways(rest, range(cap + 1))
            faces = _ways(rest, range(1, sides))
            ways = comb(count, at_cap)
            for k, k_ways in enumerate(follow_ups):
                if not k_ways:
                    continue
                scale = ways * k_ways * sides ** (rest * cap - k)
                offset = at_cap * capped + step * k
                for f, f_ways in enumerate(faces):
                    if f_ways:
                        weights[offset + f] = weights.get(offset + f, 0) + scale * f_ways
        return Dist(weights, sides ** ((cap + 1) * count))

    # -- combinators ----------------------------------------------------------------
    def add(self, other: Dist) -> Dist:
        """The distribution of the sum of two independent values."""
        out: dict[int, int] = {}
        for a, wa in self._sorted:
            for b, wb in other._sorted:
                out[a + b] = out.get(a + b, 0) + wa * wb
        total = self.total * other.total
        kept = self.total - self.truncated
        kept_other = other.total - other.truncated
        return Dist(out, total, total - kept * kept_other)

    def shift(self, k: int) -> Dist:
        return Dist({v + k: w for v, w in self._sorted}, self.total, self.truncated)

    def repeat(self, n: int) -> Dist:
        """The sum of ``n`` independent copies (``n`` ≥ 0), by repeated squaring."""
        result = Dist.constant(0)
        base = self
        while n:
            if n & 1:
                result = result.add(base)
            n >>= 1
            if n:
                base = base.add(base)
        return result

    def map(self, fn: Callable[[int], int]) -> Dist:
        out: dict[int, int] = {}
        for v, w in self._sorted:
            out[fn(v)] = out.get(fn(v), 0) + w
        return Dist(out, self.total, self.truncated)

    @staticmethod
    def mixture(parts: Iterable[tuple[Fraction, Dist]]) -> Dist:
        """Pick one of ``parts`` with the given probabilities (summing to 1)."""
        probs: dict[int, Fraction] = {}
        for p, d in parts:
            for v, pv in d.items():
                probs[v] = probs.get(v, Fraction(0)) + p * pv
        # what the parts truncated is what is missing from the sum of `probs`
        return Dist.from_probabilities(probs)

    # -- queries --------------------------------------------------------------------
    def items(self) -> list[tuple[int, Fraction]]:
        return [(v, Fraction(w, self.total)) for v, w in self._sorted]

    def float_items(self) -> list[tuple[int, float]]:
        """``items`` as floats for the JSON edge: the same floats ``float(p)`` gives
        (a quotient of two ints is correctly rounded, reduced or not), without reducing
        thousands of Fractions of a thousand bits first."""
        return [(v, w / self.total) for v, w in self._sorted]

    def p(self, predicate: Callable[[int], bool]) -> Fraction:
        return Fraction(sum(w for v, w in self._sorted if predicate(v)), self.total)

    @property
    def truncated_mass(self) -> Fraction:
        return Fraction(self.truncated, self.total)

    def mean(self) -> Fraction:
        """The mean over the kept outcomes, weighted as they are (truncation ignored)."""
        kept = self.total - self.truncated
        if kept == 0:
            return Fraction(0)
        return Fraction(sum(v * w for v, w in self._sorted), kept)

    def compare(self, other: Dist) -> tuple[Fraction, Fraction, Fraction]:
        """P(self > other), P(self == other), P(self < other), in linear time."""
        greater = equal = 0
        # cumulative weight of `other` strictly below each value of self
        o = other._sorted
        j = 0
        below = 0
        eq_weights = dict(o)
        for v, w in self._sorted:
            while j < len(o) and o[j][0] < v:
                below += o[j][1]
                j += 1
            greater += w * below
            equal += w * eq_weights.get(v, 0)
        total = self.total * other.total
        less = (self.total - self.truncated) * (other.total - other.truncated) - greater - equal
        return Fraction(greater, total), Fraction(equal, total), Fraction(less, total)

    def dealt(self) -> dict[str, Any] | None:
        """What the values above 0 (damage dealt) come to, exactly: their chance, and
        given that some is dealt, its mean, its 10th, 50th and 90th percentiles (each the
        least value with at least that share of them at or below it) and its least and
        most value; ``None`` when no value is above 0. Truncated mass is left out, as
        ``mean`` leaves it out. Floats are quotients of ints, correctly rounded."""
        hits = [(v, w) for v, w in self._sorted if v > 0]
        weight = sum(w for _, w in hits)
        if not weight:
            return None

        def percentile(tenths: int) -> int:
            seen = 0
            for v, w in hits:
                seen += w
                if seen * 10 >= weight * tenths:
                    return v
            raise AssertionError("the weights of the values above 0 sum to their weight")

        return {
            "chance": weight / self.total,
            "mean": sum(v * w for v, w in hits) / weight,
            "p10": percentile(1),
            "median": percentile(5),
            "p90": percentile(9),
            "least": hits[0][0],
            "most": hits[-1][0],
        }

    def to_json(self) -> dict[str, Any]:
        """``{mean, distribution: [[value, p]], truncated_mass, dealt}`` with float
        probabilities (``dealt``: ``Dist.dealt``)."""
        return {
            "mean": float(self.mean()),
            "distribution": [[v, p] for v, p in self.float_items()],
            "truncated_mass": float(self.truncated_mass),
            "dealt": self.dealt(),
        }


def _ways(count: int, values: range) -> list[int]:
    """``out[t]``: in how many ways ``count`` numbers, each one of ``values`` (from 0
    up), sum to ``t``."""
    out = [1]
    for _ in range(count):
        nxt = [0] * (len(out) + values[-1])
        for t, ways in enumerate(out):
            if ways:
                for v in values:
                    nxt[t + v] += ways
        out = nxt
    return out


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
