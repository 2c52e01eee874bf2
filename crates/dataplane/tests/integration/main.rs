//! Real exchanges over loopback and between network namespaces, with small counts; tc
//! enforcement on real interfaces in namespaces.

mod loopback;
mod memcache;
mod netns;
mod shaping;
mod tc;
