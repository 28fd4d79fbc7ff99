// A view that throws while rendering: the rest of the page goes on, the visitor sees a short notice,
// and the error is reported to the server as a client error (its message only: never props or state).

import { Component, type ReactNode } from "react";

export class ErrorBoundary extends Component<{ onError: (message: string) => void; children: ReactNode }, { failed: boolean }> {
  state = { failed: false };

  static getDerivedStateFromError() {
    return { failed: true };
  }

  componentDidCatch(error: unknown) {
    this.props.onError(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  }

  render() {
    return this.state.failed ? <p role="alert">Something went wrong</p> : this.props.children;
  }
}
