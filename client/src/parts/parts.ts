// The widget's optional parts (spec section 2: email, socials, swaps, send, receive, on-ramp,
// activity and pay load only when the feature is enabled). Each is its own chunk, imported the
// first time a view draws it, which views do only when the session's options enable the feature.
// A feature issue adds its part here the same way.

import { lazy } from "react";

export const EmailLogin = lazy(() => import("./EmailLogin/EmailLogin").then((m) => ({ default: m.EmailLogin })));
export const SocialLogin = lazy(() => import("./SocialLogin/SocialLogin").then((m) => ({ default: m.SocialLogin })));
export const Activity = lazy(() => import("./Activity/Activity").then((m) => ({ default: m.Activity })));
export const Swap = lazy(() => import("./Swap/Swap").then((m) => ({ default: m.Swap })));
