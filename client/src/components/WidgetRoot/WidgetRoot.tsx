// Everything a widget draws: the configuration alert when the gateway refused the page, else the
// modal (the router chart's view) and the toasts; all inside one theme scope. Render errors are
// reported to the server and do not take the host page down.

import type { ReactNode } from "react";
import { useCallback } from "react";
import { useSelector } from "@xstate/react";
import { useRefusal, useStarted, WidgetContext, type ViewModel } from "../../context/widgetContext";
import { CurrentView } from "../../views/CurrentView/CurrentView";
import { ConfigurationAlert } from "../ConfigurationAlert/ConfigurationAlert";
import { ErrorBoundary } from "../ErrorBoundary/ErrorBoundary";
import { Modal } from "../Modal/Modal";
import { ThemeScope } from "../ThemeScope/ThemeScope";
import { Toasts } from "../Toasts/Toasts";

function Drawing({ embedded }: { embedded: boolean }) {
  const refusal = useRefusal();
  const started = useStarted();
  if (refusal) return <ConfigurationAlert refusal={refusal} />;
  if (!started) return null;
  return (
    <>
      <Modal embedded={embedded}>
        <CurrentView />
      </Modal>
      <Toasts />
    </>
  );
}

function Themed({ widget, children }: { widget: ViewModel; children: ReactNode }) {
  // The session's theme once it is there; before (and for the alert), what the host asked for.
  const theme = useSelector(widget.transport, (s) => s.context.mirror.state?.options.themeMode) ?? widget.requested.themeMode;
  const variables = useSelector(widget.transport, (s) => s.context.mirror.state?.options.themeVariables) ?? widget.requested.themeVariables;
  return (
    <ThemeScope themeMode={theme} variables={variables}>
      {children}
    </ThemeScope>
  );
}

export function WidgetRoot({ widget, embedded = false }: { widget: ViewModel; embedded?: boolean }) {
  const onError = useCallback((message: string) => widget.reportError("render", message), [widget]);
  return (
    <WidgetContext.Provider value={widget}>
      <Themed widget={widget}>
        <ErrorBoundary onError={onError}>
          <Drawing embedded={embedded} />
        </ErrorBoundary>
      </Themed>
    </WidgetContext.Provider>
  );
}
