//! Macros the layer crates share.

/// The accessor trio of a service that wraps an inner service, tower style:
/// `get_ref`, `get_mut` and `into_inner`. Invoked inside the service's
/// inherent `impl`; with no argument the inner service is the field `inner`
/// of type `S`, else name the field, its type and what it is:
///
/// ```ignore
/// impl<S> Classify<S> {
///     seawall_core::define_inner_service_accessors!();
/// }
/// impl<S, F, R> Fallback<S, F, R> {
///     seawall_core::define_inner_service_accessors!(primary: S, "the primary service");
/// }
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! define_inner_service_accessors {
    () => {
        $crate::define_inner_service_accessors!(inner: S, "the inner service");
    };
    ($field:ident : $service:ident, $what:literal) => {
        #[doc = concat!("A reference to ", $what, ".")]
        pub fn get_ref(&self) -> &$service {
            &self.$field
        }

        #[doc = concat!("A mutable reference to ", $what, ".")]
        pub fn get_mut(&mut self) -> &mut $service {
            &mut self.$field
        }

        #[doc = concat!("Consumes `self`, returning ", $what, ".")]
        pub fn into_inner(self) -> $service {
            self.$field
        }
    };
}
