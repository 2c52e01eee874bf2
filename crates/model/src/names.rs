//! One way to give an enum of choices its names: [`names!`](crate::names) implements `ALL`,
//! `as_str`, `Display` and `FromStr` from one table, so a command line parses a flag with the
//! library's own `FromStr` (no mirror enum) and an unknown value gets an error that lists what
//! is accepted.

/// A name that is none of an enum's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {given:?}; expected one of: {}", accepted.join(", "))]
pub struct UnknownName {
    /// what was being named ("policy", "method", ...)
    pub what: &'static str,
    pub given: String,
    pub accepted: &'static [&'static str],
}

/// `names!(Type, "what", { Variant => "name", ... })` gives the fieldless enum `Type` the
/// associated `ALL` (every value, in table order) and `NAMES`, `as_str`, `Display` and a
/// case-insensitive `FromStr` whose error is an [`UnknownName`].
#[macro_export]
macro_rules! names {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// every value, in the order of its names
            pub const ALL: [$ty; $crate::__count!($($variant)+)] = [$($ty::$variant),+];
            /// every value's name
            pub const NAMES: [&'static str; $crate::__count!($($variant)+)] = [$($name),+];

            /// the value's name
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = $crate::names::UnknownName;
            fn from_str(s: &str) -> ::std::result::Result<$ty, $crate::names::UnknownName> {
                let t = s.trim();
                $(if t.eq_ignore_ascii_case($name) {
                    return Ok($ty::$variant);
                })+
                Err($crate::names::UnknownName {
                    what: $what,
                    given: s.to_string(),
                    accepted: &$ty::NAMES,
                })
            }
        }
    };
}

/// The number of identifiers given (for [`names!`](crate::names)'s array lengths).
#[doc(hidden)]
#[macro_export]
macro_rules! __count {
    () => { 0usize };
    ($head:ident $($tail:ident)*) => { 1usize + $crate::__count!($($tail)*) };
}

#[cfg(test)]
mod tests {
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Colour {
        Red,
        DeepBlue,
    }
    crate::names!(Colour, "colour", { Red => "red", DeepBlue => "deep-blue" });

    #[test]
    fn names_round_trip_and_unknown_names_list_the_accepted_ones() {
        for c in Colour::ALL {
            assert_eq!(c.as_str().parse::<Colour>().unwrap(), c);
            assert_eq!(c.to_string(), c.as_str());
        }
        assert_eq!(" Deep-Blue ".parse::<Colour>().unwrap(), Colour::DeepBlue);
        let e = "green".parse::<Colour>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown colour \"green\"; expected one of: red, deep-blue"
        );
    }
}
