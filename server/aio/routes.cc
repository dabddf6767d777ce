// Every route of the AIO API, in one table (server/http/route_table.h): what DeerFlow's
// AioSandbox and the agent_sandbox SDK call below a sandbox's URL. Adding a route is adding
// a line here and its handler in the room's route file. Paths no line matches answer 404,
// paths a line matches under another method 405 (FastAPI's texts, as the AIO image's).
#include "server/aio/internal.h"

namespace corral::server {

const RouteTable<AioApi::Impl::Handler>& AioApi::Impl::Routes() {
  static const RouteTable<Handler> table = [] {
    RouteTable<Handler> t;
    t.Add("GET", "v1/sandbox", &Impl::SandboxInfo)
        // v1/file/*: file_routes.cc
        .Add("GET", "v1/file/download", &Impl::FileDownload)
        .Add("POST", "v1/file/read", &Impl::FileRead)
        .Add("POST", "v1/file/write", &Impl::FileWrite)
        .Add("POST", "v1/file/list", &Impl::FileList)
        .Add("POST", "v1/file/find", &Impl::FileFind)
        .Add("POST", "v1/file/grep", &Impl::FileGrep)
        .Add("POST", "v1/file/search", &Impl::FileSearch)
        // v1/shell/*: shell_routes.cc
        .Add("POST", "v1/shell/exec", &Impl::ShellExec)
        .Add("POST", "v1/shell/view", &Impl::ShellView)
        .Add("POST", "v1/shell/wait", &Impl::ShellWait)
        .Add("POST", "v1/shell/kill", &Impl::ShellKill)
        .Add("POST", "v1/shell/write", &Impl::ShellWrite)
        .Add("POST", "v1/shell/sessions/create", &Impl::ShellCreateSession)
        .Add("POST", "v1/shell/sessions/update", &Impl::ShellUpdateSession)
        .Add("GET", "v1/shell/sessions", &Impl::ShellListSessions)
        .Add("DELETE", "v1/shell/sessions", &Impl::ShellDeleteSessions)
        .Add("GET", "v1/shell/sessions/stats", &Impl::ShellSessionStats)
        .Add("DELETE", "v1/shell/sessions/{id}", &Impl::ShellDeleteSession)
        // v1/bash/*: bash_routes.cc. Never a 404 from v1/bash/exec (see there).
        .Add("POST", "v1/bash/exec", &Impl::BashExec)
        .Add("POST", "v1/bash/output", &Impl::BashOutput)
        .Add("POST", "v1/bash/kill", &Impl::BashKill)
        .Add("POST", "v1/bash/write", &Impl::BashWrite)
        .Add("POST", "v1/bash/sessions/create", &Impl::BashCreateSession)
        .Add("GET", "v1/bash/sessions", &Impl::BashListSessions)
        .Add("POST", "v1/bash/sessions/{id}/close", &Impl::BashCloseSession);
    return t;
  }();
  return table;
}

void AioApi::Handle(const AioSandboxRef& sandbox, std::string_view subpath, HttpRequest request,
                    Reply reply) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->DropFinished();
    impl_->CloseIdleImplicit();
  }
  auto match = Impl::Routes().Find(request.method, subpath);
  switch (match.outcome) {
    case RouteOutcome::kNotFound:
      return reply(aio::RouteNotFound());
    case RouteOutcome::kMethodNotAllowed: {
      HttpResponse refused = aio::MethodNotAllowed();
      refused.headers.emplace_back("Allow", match.allow);
      return reply(std::move(refused));
    }
    case RouteOutcome::kFound:
      break;
  }
  Impl::Call call{sandbox, std::move(match.params), std::move(request)};
  (impl_.get()->*(*match.handler))(call, std::move(reply));
}

}  // namespace corral::server
