package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/sandbox/docker"
	"github.com/nextstate-rl/nextstate/sandbox/image"
)

// newImage is `nextstate image`: the images sandboxes run, made without a
// registry.
func newImage() *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Build sandbox images on Docker engines, with no registry",
	}
	c.AddCommand(newImageBuild(), newImageBuildTask())
	return c
}

func newImageBuild() *cobra.Command {
	var (
		hosts []string
		o     image.BaseOptions
		quiet bool
	)
	c := &cobra.Command{
		Use:   "build",
		Short: "Build the default sandbox image " + image.Base,
		Long: `Build the default sandbox image, ` + image.Base + ` (also tagged ` + image.Repo + `:<recipe>),
from Debian: debootstrap --variant=minbase installs the packages into a directory
from the host's apt mirror, the directory is packed into a rootfs tarball kept in
--cache-dir, and the tarball is imported into each engine. Nothing is pulled from
an image registry. An engine that has the tag already is left alone unless
--force; --fresh runs debootstrap again instead of reusing the cached tarball.
Building the rootfs needs root and debootstrap.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if !quiet {
				o.Log = cmd.ErrOrStderr()
			}
			return eachEngine(ctx, hosts, func(ctx context.Context, host string, e docker.Engine) error {
				ref, err := image.BuildBase(ctx, e.Client, o)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", host, ref, image.Base)
				return nil
			})
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&hosts, "docker-host", nil, "engine to build on (repeatable: unix://, tcp://, ssh://); default $DOCKER_HOST or the local socket")
	fl.StringVar(&o.Suite, "suite", image.DefaultSuite, "Debian release")
	fl.StringVar(&o.Mirror, "mirror", "", "Debian archive to install from (default: the host's apt sources)")
	fl.StringVar(&o.CacheDir, "cache-dir", image.DefaultCacheDir(), "where rootfs tarballs are kept")
	fl.BoolVar(&o.Force, "force", false, "import again even if the tag is present")
	fl.BoolVar(&o.Fresh, "fresh", false, "run debootstrap again even if the rootfs tarball is cached")
	fl.BoolVarP(&quiet, "quiet", "q", false, "print only the result")
	return c
}

func newImageBuildTask() *cobra.Command {
	var (
		hosts []string
		o     image.TaskOptions
		quiet bool
	)
	c := &cobra.Command{
		Use:   "build-task DIR",
		Short: "Build a task's Dockerfile on the engine (legacy builder)",
		Long: `Build the Dockerfile of a task directory on each engine with the legacy builder
(no BuildKit: no heredocs) and print the image's reference, ` + image.TaskRepo + `/<name>:<hash>,
where the hash covers the directory's content. A present tag is reused unless --force.
A FROM image that is not on the engine is replaced by --base-image (default
` + image.Base + `, as in tasks validate and serve); with --base-image "" such a FROM is an
error, as nothing is pulled. A failed build's error ends with the build's output.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if !quiet {
				o.Log = cmd.ErrOrStderr()
			}
			return eachEngine(ctx, hosts, func(ctx context.Context, host string, e docker.Engine) error {
				ref, err := image.BuildTask(ctx, e.Client, args[0], o)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", host, ref)
				return nil
			})
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&hosts, "docker-host", nil, "engine to build on (repeatable: unix://, tcp://, ssh://); default $DOCKER_HOST or the local socket")
	fl.StringVar(&o.BaseImage, "base-image", image.Base, `image that replaces a FROM image missing from the engine ("" for none: such a FROM is an error)`)
	fl.StringVar(&o.Name, "name", "", "image name (default: the directory's name)")
	fl.StringVarP(&o.Dockerfile, "file", "f", "Dockerfile", "the Dockerfile's name in DIR")
	fl.BoolVar(&o.Force, "force", false, "build even if the tag is present")
	fl.BoolVarP(&quiet, "quiet", "q", false, "print only the result")
	return c
}

// eachEngine runs fn on each engine of hosts (default: the environment's
// one), one after another, and stops at the first error.
func eachEngine(ctx context.Context, hosts []string, fn func(ctx context.Context, host string, e docker.Engine) error) error {
	if len(hosts) == 0 {
		hosts = []string{""}
	}
	var errs []error
	for _, h := range hosts {
		cli, err := docker.NewClient(h)
		if err != nil {
			return err
		}
		if h == "" {
			h = cli.DaemonHost()
		}
		err = fn(ctx, h, docker.Engine{Host: h, Client: cli})
		cli.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", h, err))
			break
		}
	}
	return errors.Join(errs...)
}
