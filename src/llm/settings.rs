//! A caller's model name and sampling settings, carried by every request a model makes.
//!
//! [`Configured`] wraps any [`ChatModel`] with [`ModelSettings`]: its requests name the model and
//! carry the settings, which the wire encoder writes (`extra_body` as a key for a Python callable,
//! so `client.chat.completions.create(**request)` takes it; merged into the body by the HTTP
//! client).

use std::sync::Arc;

use crate::llm::request::{ChatRequest, ModelSettings};
use crate::llm::{BoxFuture, ChatModel, ChatResponse, ModelError};

/// A caller's model names for the main and light routes, and the settings both carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteSettings {
    /// The model id main-route requests name.
    pub main_model: Option<String>,
    /// The model id light-route requests name; with no light model of its own, the light route
    /// then uses the main model's backend under this name.
    pub light_model: Option<String>,
    /// Sent with every request of both routes.
    pub settings: ModelSettings,
}

impl RouteSettings {
    /// The main route's model.
    pub fn main(&self, main: &Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
        Configured::wrap(
            main.clone(),
            self.settings.clone().with_model(self.main_model.clone()),
        )
    }

    /// The light route's model, if there is one: `light`, or the main backend under the light
    /// model name.
    pub fn light(
        &self,
        main: &Arc<dyn ChatModel>,
        light: Option<Arc<dyn ChatModel>>,
    ) -> Option<Arc<dyn ChatModel>> {
        let base = match (light, &self.light_model) {
            (Some(l), _) => l,
            (None, Some(_)) => main.clone(),
            (None, None) => return None,
        };
        Some(Configured::wrap(
            base,
            self.settings.clone().with_model(self.light_model.clone()),
        ))
    }
}

/// A model whose requests carry [`ModelSettings`].
pub(crate) struct Configured {
    inner: Arc<dyn ChatModel>,
    settings: Arc<ModelSettings>,
}

impl Configured {
    /// `inner` with `settings`; `inner` itself when there are none.
    pub(crate) fn wrap(inner: Arc<dyn ChatModel>, settings: ModelSettings) -> Arc<dyn ChatModel> {
        if settings.is_empty() {
            return inner;
        }
        Arc::new(Configured {
            inner,
            settings: Arc::new(settings),
        })
    }
}

impl ChatModel for Configured {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        self.inner.complete(request)
    }

    fn model_id(&self) -> Option<String> {
        self.settings
            .model
            .clone()
            .or_else(|| self.inner.model_id())
    }

    fn settings(&self) -> Option<Arc<ModelSettings>> {
        Some(self.settings.clone())
    }

    fn describe(&self) -> String {
        match &self.settings.model {
            Some(m) => format!("{} ({m})", self.inner.describe()),
            None => self.inner.describe(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn a_light_model_name_alone_makes_a_light_route_on_the_main_backend() {
        let main: Arc<dyn ChatModel> = Arc::new(crate::llm::scout::OfflineScout);
        let routes = RouteSettings {
            main_model: Some("big".into()),
            light_model: Some("small".into()),
            settings: ModelSettings {
                temperature: Some(0.0),
                ..Default::default()
            },
        };
        assert_eq!(routes.main(&main).model_id().as_deref(), Some("big"));
        let light = routes.light(&main, None).expect("a light route");
        assert_eq!(light.model_id().as_deref(), Some("small"));
        assert_eq!(light.settings().and_then(|s| s.temperature), Some(0.0));
        assert!(RouteSettings::default().light(&main, None).is_none());
        // No settings at all: the model itself, unwrapped.
        assert!(Arc::ptr_eq(&RouteSettings::default().main(&main), &main));
    }

    #[test]
    fn settings_are_read_and_every_bad_value_is_named() {
        let s = ModelSettings::from_json(
            "model_settings",
            &json!({"model": "m", "temperature": 0.2, "max_tokens": 50, "extra_body": {"k": 1}, "seed": null}),
        )
        .unwrap();
        assert_eq!(
            s,
            ModelSettings {
                model: Some("m".into()),
                temperature: Some(0.2),
                max_tokens: Some(50),
                extra_body: json!({"k": 1}).as_object().unwrap().clone(),
                ..Default::default()
            }
        );
        let err = |v: Value| {
            ModelSettings::from_json("model_settings", &v)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"temperature": 3})),
            "model_settings['temperature']: must be a number from 0 to 2, got 3"
        );
        assert_eq!(
            err(json!({"max_tokens": 0})),
            "model_settings['max_tokens']: must be an int of at least 1, got 0"
        );
        assert_eq!(
            err(json!({"temp": 1})),
            "model_settings: unknown key 'temp'; expected one of model, temperature, top_p, max_tokens, seed, extra_body"
        );
        assert_eq!(
            err(json!([1])),
            "model_settings: must be a mapping, got [1]"
        );
    }
}
