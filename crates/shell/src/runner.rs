//! Running a validated command: the shell's half is only to hand exactly
//! what it accepted to the sandbox (`agentcaps-sandbox`), with the
//! confinement its policy describes.

use agentcaps_sandbox::kernel::{Enforcement, KernelRules};
use agentcaps_sandbox::{OutputCounter, RunResult, Sandbox, SandboxCommand};

use crate::error::ShellError;
use crate::policy::ShellPolicy;
use crate::request::ValidatedCommand;

impl ShellPolicy {
    /// Run a command that [`ShellPolicy::validate`] accepted.
    ///
    /// The program is executed directly (no shell) with the validated argv,
    /// working directory and environment, stdin closed, in a new process
    /// group (on Windows, a new Job object). On Linux, with a path policy, it runs in its private view
    /// ([`kernel::view`](crate::kernel::view)): when it ends, every process it left is killed and
    /// its writes are judged and committed ([`RunResult::changes`]). On
    /// timeout everything it started is killed and the result says
    /// `timed_out`. Output is read to the end so the child never blocks;
    /// what exceeds `max_output_bytes` is discarded and flagged.
    ///
    /// # Errors
    ///
    /// [`ShellError::Spawn`] when the program cannot be started or waited
    /// for; [`ShellError::KernelEnforcement`] when the policy requires full
    /// kernel enforcement and it is not available here.
    pub async fn run(&self, command: ValidatedCommand) -> Result<RunResult, ShellError> {
        Ok(self.sandbox().run(command.into_sandbox()).await?)
    }

    /// [`ShellPolicy::run`], asking `decider` about the run's changes
    /// refused only because they write a write-protected entry, before its
    /// write-back commits: the approved ones land with the rest, in one
    /// commit; the others stay refused. With `counter`, the command's output
    /// is counted into it as it comes.
    ///
    /// # Errors
    ///
    /// As [`ShellPolicy::run`].
    pub async fn run_deciding(
        &self,
        command: ValidatedCommand,
        decider: std::sync::Arc<dyn agentcaps_sandbox::WriteBackDecider>,
        counter: Option<OutputCounter>,
    ) -> Result<RunResult, ShellError> {
        let sandbox = self.sandbox_builder().write_back_decider(decider).build();
        let mut command = command.into_sandbox();
        if let Some(counter) = counter {
            command = command.count_output(counter);
        }
        Ok(sandbox.run(command).await?)
    }

    /// [`ShellPolicy::run`], counting the command's output into `counter`
    /// as it comes (for a host that reports progress while it runs).
    ///
    /// # Errors
    ///
    /// As [`ShellPolicy::run`].
    pub async fn run_counting_output(
        &self,
        command: ValidatedCommand,
        counter: OutputCounter,
    ) -> Result<RunResult, ShellError> {
        let command = command.into_sandbox().count_output(counter);
        Ok(self.sandbox().run(command).await?)
    }

    /// What a run of `command` would get here, without running it (for
    /// `check shell`): the enforcement level, and why it is not `full`.
    /// Whether the private view can be built is found by trying: the view
    /// helper is started once in this process in its probe mode, which
    /// creates the namespaces and an overlay, then exits.
    #[must_use]
    pub fn planned_enforcement(&self, command: &ValidatedCommand) -> (Enforcement, Option<String>) {
        self.sandbox()
            .planned_command_enforcement(&command.clone().into_sandbox())
    }

    /// [`ShellPolicy::run`] on a private single-threaded runtime, for hosts
    /// without one.
    ///
    /// # Errors
    ///
    /// As [`ShellPolicy::run`]; [`ShellError::Config`] when called from
    /// inside a tokio runtime (use `run` there).
    pub fn run_blocking(&self, command: ValidatedCommand) -> Result<RunResult, ShellError> {
        Ok(self.sandbox().run_blocking(command.into_sandbox())?)
    }

    /// What the kernel is asked to enforce for `command`
    /// ([`KernelRules::from_policy`]): the path policy's roots (read-write
    /// ones writable) plus what running the resolved program needs, or no
    /// file restriction when there is no path policy; network and the
    /// `require` switch as the policy says. Pass it to
    /// [`kernel::would_enforce`](crate::kernel::would_enforce) to say what a run would get.
    pub fn kernel_rules(&self, command: &ValidatedCommand) -> KernelRules {
        self.sandbox().kernel_rules(&command.program)
    }

    /// The sandbox this policy's commands run in: its path policy, network,
    /// output cap and view settings.
    pub(crate) fn sandbox(&self) -> Sandbox {
        self.sandbox_builder().build()
    }

    fn sandbox_builder(&self) -> agentcaps_sandbox::SandboxBuilder {
        Sandbox::builder()
            .path_policy(self.paths.clone())
            .allow_network(self.allow_network)
            .network_proxy(self.proxy.clone())
            .require_kernel_enforcement(self.require_kernel_enforcement)
            .max_output_bytes(self.max_output_bytes)
            .private_view(self.view.enabled)
            .view_helper(self.view.helper.clone())
            .staging_dir(self.view.staging.clone())
            .cache_dirs(self.view.cache_dirs.clone())
            .fail_commit_at(self.view.commit_fault)
            .kill_commit_at(self.view.commit_kill)
            .skip_landlock_in_view(self.view.skip_landlock)
            .skip_names_layer_in_view(self.view.skip_names_layer)
            .limits(self.view.limits)
    }
}

impl ValidatedCommand {
    /// Exactly what was validated, as the sandbox runs it.
    fn into_sandbox(self) -> SandboxCommand {
        let mut command =
            SandboxCommand::new(self.program, self.argv, self.cwd).timeout(self.timeout);
        command.env = self.env;
        command.stdin = self.stdin;
        command.runs_programs = self.runs_programs;
        command
    }
}
