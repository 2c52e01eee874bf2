//! Doob walks and lumps prepared at one θ: every flow's supermartingales are looked up once,
//! so that the searches over the delay, the block length and the blocks are arithmetic.
//!
//! A walk stands for P(∃N ≥ n_s: Σ_members S_g[s_g, N) + Σ lumps > rate·N + c) (parent module
//! docs); its value is the log of the bound, split into the walk part
//! ln Π κ_g − θ[rate·n_s − Σ ρ_g (n_s − s_g) + c] and the lumps' ln E[e^{θ·lumps}]; where
//! window bounds are used, a member's ln κ_g + θρ_g(n_s − s_g) may be its window bound instead
//! (parent module docs, "Windows").

use super::{log_sum_exp, Tail, Window, PEAK};
use std::cell::RefCell;
use std::rc::Rc;

/// A flow's two supermartingales at one grid point: (ρ [work/step], ln κ) each, in the order
/// of [`super::Tilt::opts`].
pub(super) type Pair = [(f64, f64); 2];

/// Where a walk member starts counting [reversed steps], resolved per evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Start {
    /// from the first reversed step
    Zero,
    /// from the analysed flow's own arrival, m = ⌈d⌉
    M,
    /// from the block's start a
    A,
    /// from max(a, m)
    MaxAm,
    /// from the end of a relayed window w
    Window,
}

/// The values the starts resolve to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Starts {
    pub m: f64,
    pub a: f64,
    pub w: f64,
}

impl Starts {
    pub fn of(&self, s: Start) -> f64 {
        match s {
            Start::Zero => 0.0,
            Start::M => self.m,
            Start::A => self.a,
            Start::MaxAm => self.a.max(self.m),
            Start::Window => self.w,
        }
    }
}

/// A walk member: its supermartingales, where it starts, and its window bound where it may pay
/// that for the steps before the walk's start instead (parent module docs, "Windows").
pub(super) type Member = (Pair, Start, Option<Rc<Window>>);

/// A Doob walk's independent members, and the capacity its dependent members took (they are
/// lumps of the walk's owner).
#[derive(Debug, Clone, Default)]
pub(super) struct Walker {
    pub members: Vec<Member>,
    /// the walk's rate less the dependent members' capacities [work/step]
    pub rate: f64,
    /// (capacity, start) of each dependent member: the crossing level rises by cap·start
    pub caps: Vec<(f64, Start)>,
    /// each member's costs at the last evaluation and what they were computed for: the blocks
    /// of a two-queue bound and the windows of an upstream lump change the counted steps of a
    /// few members only, and a window bound costs a few exponentials per chain state
    pub costs: RefCell<Vec<Costed>>,
    /// the members' supermartingales chosen at the last evaluation ([`Walker::choice`])
    pub chosen: RefCell<Vec<u8>>,
}

/// A member's costs under its two supermartingales, for θ, its counted steps and whether
/// windowed ([`Walker::costs`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Costed {
    theta: f64,
    weight: f64,
    windowed: bool,
    cost: [f64; 2],
}

impl Walker {
    /// The walk part of the value at θ for a crossing at N ≥ `n_s` above rate·N + `c`, with
    /// each member's supermartingale chosen (or `fixed`), and the walk's slack under the
    /// choices (its rate less their growth rates [work/step]: how fast the value falls per
    /// step of later start); the choices are kept for [`Walker::choice`]. With `windowed`, a
    /// member's h ≡ 1 supermartingale pays the lesser of κλ'^w and its window bound for its
    /// w steps before `n_s` (the value is then no longer linear in `n_s`). `None` when the
    /// walk is unstable or a member starts after `n_s`.
    pub fn eval(
        &self,
        theta: f64,
        n_s: f64,
        c: f64,
        st: &Starts,
        fixed: Option<&[u8]>,
        windowed: bool,
    ) -> Option<(f64, f64)> {
        if self.rate.is_nan() || self.rate <= 0.0 {
            return None;
        }
        // what each member pays under each of its supermartingales (kept from the last
        // evaluation where its inputs are the same)
        let mut costs = self.costs.borrow_mut();
        costs.truncate(self.members.len());
        for (i, (pair, s, win)) in self.members.iter().enumerate() {
            let s = st.of(*s);
            if s > n_s {
                return None;
            }
            let weight = n_s - s;
            let windowed = windowed && win.is_some();
            if costs
                .get(i)
                .is_some_and(|c| c.theta == theta && c.weight == weight && c.windowed == windowed)
            {
                continue;
            }
            let mut cost = pair.map(|(rho, ln_k)| ln_k + theta * rho * weight);
            if let (Some(win), true) = (win, windowed) {
                cost[PEAK] = cost[PEAK].min(win.ln_mgf(weight));
            }
            let c = Costed {
                theta,
                weight,
                windowed,
                cost,
            };
            if i < costs.len() {
                costs[i] = c;
            } else {
                costs.push(c);
            }
        }
        let cost = |i: usize, o: usize| costs[i].cost[o];
        let rho = |i: usize, o: u8| self.members[i].0[o as usize].0;
        let n = self.members.len();
        // what the choices pay and how fast they grow
        let sums = |choice: &[u8]| {
            choice
                .iter()
                .enumerate()
                .fold((0.0, 0.0), |(paid, slope), (i, &o)| {
                    (paid + cost(i, o as usize), slope + rho(i, o))
                })
        };
        let mut choice = self.chosen.borrow_mut();
        choice.clear();
        match fixed {
            Some(f) if f.len() == n => choice.extend_from_slice(f),
            Some(_) => return None,
            None => choice.extend((0..n).map(|i| u8::from(cost(i, 1) < cost(i, 0)))),
        }
        let (mut paid, mut slope) = sums(&choice[..]);
        if fixed.is_none() && slope > self.rate {
            // while Σρ exceeds the rate, switch to the smaller ρ that costs least per unit of
            // ρ saved
            let mut total = slope;
            while total > self.rate {
                let mut best: Option<(f64, usize, u8)> = None;
                for (i, &cur) in choice.iter().enumerate() {
                    for o in 0..2u8 {
                        let saved = rho(i, cur) - rho(i, o);
                        if saved > 0.0 {
                            let per = (cost(i, o as usize) - cost(i, cur as usize)) / saved;
                            if best.is_none_or(|(b, _, _)| per < b) {
                                best = Some((per, i, o));
                            }
                        }
                    }
                }
                let (_, i, o) = best?;
                total -= rho(i, choice[i]) - rho(i, o);
                choice[i] = o;
            }
            (paid, slope) = sums(&choice[..]);
        }
        if self.rate < slope {
            return None;
        }
        let lift: f64 = self.caps.iter().map(|(cap, s)| cap * st.of(*s)).sum();
        let v = paid - theta * (self.rate * n_s + c + lift);
        v.is_finite().then_some((v, self.rate - slope))
    }

    /// The supermartingales chosen at the last evaluation, to fix them for another.
    pub fn choice(&self) -> Vec<u8> {
        self.chosen.borrow().clone()
    }
}

/// An upstream queue's lump: its backlog plus its relayed flows' arrivals over the window.
#[derive(Debug, Clone)]
pub(super) struct UpLump {
    /// the relayed flows' windows: (pair at their grid point, θ there, Hölder scale, window
    /// bound there)
    pub relayed: Vec<(Pair, f64, f64, Option<Rc<Window>>)>,
    /// the queue's own walk at θ': relayed flows from 0, the others from the window's end
    pub inner: Walker,
    /// ln E of the inner walk's own lumps (its dependent members)
    pub inner_lumps: f64,
    /// its rate [work/step]
    pub rate: f64,
    /// ln of its utilisation by the levels concerned
    pub ln_util: f64,
    /// θ' [1/work]
    pub theta_tail: f64,
    /// the tail integral's constants at the lump's θ (its grid point's) and θ'
    pub tail: Tail,
    /// growth per step of window of the relayed windows' part (largest options)
    pub window_growth: f64,
    /// θ'·Σρ of the relayed flows at θ' (largest options): the growth of ln G per step
    pub tail_growth: f64,
}

impl UpLump {
    /// ln G: the Doob bound's prefactor of the queue's walk for a window of `w` steps.
    fn ln_g(&self, w: f64) -> Option<f64> {
        let (walk, _) = self.inner.eval(
            self.theta_tail,
            w + 1.0,
            -self.rate * w,
            &Starts { m: 0.0, a: 0.0, w },
            None,
            false,
        )?;
        Some(walk + self.inner_lumps)
    }

    /// ln E[e^{θ L}] for a window of `w` steps (parent module docs, "Two queues"), the relayed
    /// windows' window bounds used if `windowed`.
    pub fn value(&self, w: f64, windowed: bool) -> Option<f64> {
        let ln_r: f64 = self
            .relayed
            .iter()
            .map(|(p, th, scale, win)| scale * window(p, win, *th, w, windowed))
            .sum();
        let ln_i = self.tail.ln_integral(self.ln_util, self.ln_g(w)?);
        let v = log_sum_exp(&[ln_r, ln_i]);
        v.is_finite().then_some(v)
    }

    /// An upper bound on the growth of [`UpLump::value`] per step of window for windows of
    /// `w` steps and more. The tail integral I = U(c·(G/U)^r − 1) (r = θ/θ', c = θ'/(θ' − θ))
    /// once G > U, whose elasticity in G is rX/(X − 1) ≤ 1 with X = c(G/U)^r, falling as G
    /// grows (G grows with the window); G itself grows at most at `tail_growth`.
    fn growth(&self, w: f64) -> Option<f64> {
        let ln_g = self.ln_g(w)?;
        let r = self.tail.ratio;
        let elasticity = if ln_g > self.ln_util {
            let ln_x = self.tail.ln_c + r * (ln_g - self.ln_util);
            // rX/(X − 1) = r/(1 − 1/X)
            r / -(-ln_x).exp_m1()
        } else {
            1.0
        };
        Some(
            self.window_growth
                .max(elasticity.min(1.0) * self.tail_growth),
        )
    }
}

/// ln of the least of the supermartingales' bounds on E[e^{θ A}] over a window of `w` steps,
/// and of the window bound if `windowed`.
fn window(p: &Pair, win: &Option<Rc<Window>>, theta: f64, w: f64, windowed: bool) -> f64 {
    let walk = p
        .iter()
        .map(|(rho, ln_k)| ln_k + theta * rho * w)
        .fold(f64::INFINITY, f64::min);
    match win {
        Some(win) if windowed => walk.min(win.ln_mgf(w)),
        _ => walk,
    }
}

#[derive(Debug, Clone)]
pub(super) enum LumpKind {
    /// a flow's arrivals over the window, and its window bound
    Window(Pair, Option<Rc<Window>>),
    Up(Rc<UpLump>),
    /// a dependent member's excess over its capacity: ln E, fixed
    Const(f64),
}

/// A lump evaluated at θ_at (its Hölder component's grid point, or the walk's) and scaled by
/// θ/θ_at.
#[derive(Debug, Clone)]
pub(super) struct Lump {
    pub kind: LumpKind,
    pub theta_at: f64,
    pub scale: f64,
}

/// ln E[e^{θ Σ lumps}] for a window of `w` steps, flows' window bounds used if `windowed`
/// (the value then grows faster than [`lumps_growth`] may say).
pub(super) fn lumps_value(lumps: &[Lump], w: f64, windowed: bool) -> Option<f64> {
    let mut total = 0.0;
    for l in lumps {
        total += l.scale
            * match &l.kind {
                LumpKind::Window(p, win) => window(p, win, l.theta_at, w, windowed),
                LumpKind::Up(u) => u.value(w, windowed)?,
                LumpKind::Const(v) => *v,
            };
    }
    total.is_finite().then_some(total)
}

/// An upper bound on the growth of [`lumps_value`] per step of window, for windows of `w`
/// steps and more.
pub(super) fn lumps_growth(lumps: &[Lump], w: f64) -> Option<f64> {
    let mut g = 0.0;
    for l in lumps {
        g += l.scale
            * match &l.kind {
                LumpKind::Window(p, _) => l.theta_at * p[0].0.max(p[1].0),
                LumpKind::Up(u) => u.growth(w)?,
                LumpKind::Const(_) => 0.0,
            };
    }
    Some(g)
}
