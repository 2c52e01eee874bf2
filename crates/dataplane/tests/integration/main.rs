//! Real exchanges over loopback and between network namespaces, with small counts; tc
//! enforcement on real interfaces in namespaces; EyeQ's agents.

mod eyeq;
mod loopback;
mod memcache;
mod netns;
mod replay;
mod shaping;
mod tc;
