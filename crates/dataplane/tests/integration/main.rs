//! Real exchanges over loopback and between network namespaces, with small counts.

mod loopback;
mod memcache;
mod netns;
mod replay;
